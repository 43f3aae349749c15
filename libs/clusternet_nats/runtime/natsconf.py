"""The hub's nats-server configuration in registration mode, rendered in one place.

deploy/compose, deploy/k8s and the tests (`testing/securehub.py`) all run what `render` writes,
so the configuration the tests prove is the one that ships. Three accounts: CLUSTERNET (the
application, with JetStream; one user per hub-side service), AUTH (the auth callout's user) and
SYS (the system account, which the hub uses to kick revoked clusters). Every other connection, a
client's or a child's leaf node, is decided by the hub's auth callout, whose answers the issuer
account key signs; nothing connects anonymously. The leaf-node port speaks only TLS, and the
monitoring port, which has no authentication, listens on loopback only.

Secrets are not in the configuration: it includes `secrets/auth.conf` (next to it), which
`secrets_include` renders from the passwords and the issuer's public key, so the rendered
configuration is the same on every installation and can be committed and drift-checked:
``python -m clusternet_nats.runtime.natsconf [--check] [DEPLOYDIR]`` writes (or checks) the
copies in deploy/compose and deploy/k8s/parent.

On Kubernetes the hub's NATS is a 3-server JetStream cluster (`ClusterRoutes`): every server runs
the same configuration (its name from `$POD_NAME`), has the callout's accounts and its own leaf
listener, and routes to the others through the headless Service. Routes authenticate with a
password of their own; since a route's URL must carry it and nats-server does not expand
variables inside strings, the route block's secret half, `secrets/routes.conf`, is rendered by
`routes_include` (the init Job keeps it in the same Secret).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from clusternet_nats.api import generated
from clusternet_nats.runtime import pki

APP_ACCOUNT = "CLUSTERNET"
AUTH_ACCOUNT = "AUTH"
SYSTEM_ACCOUNT = "SYS"
SERVICE_USERS = ("hub", "scheduler", "deployer", "predictor", "bridge")
"""Hub-side services, each its own user in CLUSTERNET (one leaked password is one service's)."""
CALLOUT_USER = "callout"
SYSTEM_USER = "sys"
ALL_USERS = (*SERVICE_USERS, CALLOUT_USER, SYSTEM_USER)
ROUTE_USER = "route"
"""The user servers of one cluster route as; not a client user (the callout never sees it)."""
JETSTREAM_DOMAIN = "hub"
SECRETS_INCLUDE = "secrets/auth.conf"
ROUTES_INCLUDE = "secrets/routes.conf"
"""Where the configuration includes its secrets from: relative to the configuration file, since
nats-server resolves every include relative to the including file."""
ISSUER_VARIABLE = "CNET_CALLOUT_ISSUER"
MAX_PAYLOAD = 8 * 1024 * 1024
"""Large Descriptions (many manifests, big ConfigMaps) fit one message."""


def password_variable(user: str) -> str:
    return f"CNET_PASSWORD_{user.upper()}"


@dataclass(frozen=True)
class Limits:
    """Connection limits. Each is a shared pool, so each is part of isolation: a flood of
    connections, a slow reader or a half-open link must not take the server from everyone."""

    max_connections: int = 16384
    """Clients and leaf nodes together; about 48 KiB of server memory each."""
    max_control_line: int = 4096
    """Longest protocol line (CONNECT, PUB subject + reply); our subjects are far shorter."""
    max_pending: int = 64 * 1024 * 1024
    """Bytes queued to one slow reader before it is cut off (at least max_payload)."""
    ping_interval: str = "1m"
    ping_max: int = 3
    """Half-open links are dropped after ping_interval x ping_max without an answer."""
    write_deadline: str = "10s"
    """A reader that takes longer than this to accept a write is a slow consumer, and is cut."""
    auth_timeout: float = 2.0
    """Seconds a connection has to authenticate (the callout's answer included)."""
    tls_timeout: float = 2.0
    """Seconds a leaf node has for its TLS handshake."""


@dataclass(frozen=True)
class ClusterRoutes:
    """The servers of one JetStream cluster, as every one of them dials the others."""

    hosts: tuple[str, ...]
    """Each server's route address (host or host:port; the port defaults to `port`)."""
    name: str = "clusternet"
    host: str = "0.0.0.0"
    port: int = 6222

    def urls(self, password: str) -> list[str]:
        return [
            f"nats-route://{ROUTE_USER}:{password}@{h if ':' in h else f'{h}:{self.port}'}" for h in self.hosts
        ]


@dataclass(frozen=True)
class HubNatsConfig:
    """Where one hub nats-server listens and finds its files; everything else is fixed policy."""

    store_dir: str
    leaf_cert: str
    leaf_key: str
    leaf_ca: str | None = None
    """Only needed to verify leaf nodes' client certificates, which registration does not use."""
    server_name: str = "hub"
    """`$POD_NAME` on Kubernetes: each server of a cluster needs its own, stable name."""
    listen_host: str = "0.0.0.0"
    port: int = 4222
    leaf_host: str = "0.0.0.0"
    leaf_port: int = 7422
    monitor_port: int = 8222
    jetstream_domain: str = JETSTREAM_DOMAIN
    max_memory_store: str = "1G"
    max_file_store: str = "8G"
    limits: Limits = Limits()
    cluster: ClusterRoutes | None = None


def _q(text: str) -> str:
    """A double-quoted nats-server config string (JSON's escaping is a subset it reads)."""
    return json.dumps(text)


def render(config: HubNatsConfig) -> str:
    """The nats-server configuration text; secrets come from the included `secrets/auth.conf`."""
    limits = config.limits
    users = "\n".join(f"      {{ user: {u}, password: ${password_variable(u)} }}" for u in SERVICE_USERS)
    leaf_ca = f"\n    ca_file: {_q(config.leaf_ca)}" if config.leaf_ca else ""
    cluster = _cluster_block(config.cluster) if config.cluster else ""
    return f"""\
# The hub's nats-server in registration mode. Generated by `python -m clusternet_nats.runtime.natsconf`
# (libs/clusternet_nats/runtime/natsconf.py); do not edit, `make lint` fails when it drifts.
# Secrets (service passwords, the auth callout issuer) come from {SECRETS_INCLUDE}, which
# `clusternet-nats-init` writes. Nothing connects anonymously: service users are listed below,
# every other connection (clusters, bootstrap tokens, leaf nodes) is decided by the hub's auth callout.
server_name: {config.server_name}
listen: {config.listen_host}:{config.port}
# Monitoring has no authentication: loopback only.
http: 127.0.0.1:{config.monitor_port}
max_payload: {MAX_PAYLOAD}
max_connections: {limits.max_connections}
max_control_line: {limits.max_control_line}
max_pending: {limits.max_pending}
ping_interval: {_q(limits.ping_interval)}
ping_max: {limits.ping_max}
write_deadline: {_q(limits.write_deadline)}

include {_q(SECRETS_INCLUDE)}

accounts {{
  {APP_ACCOUNT} {{
    jetstream: enabled
    users: [
{users}
    ]
  }}
  {AUTH_ACCOUNT} {{
    users: [ {{ user: {CALLOUT_USER}, password: ${password_variable(CALLOUT_USER)} }} ]
  }}
  {SYSTEM_ACCOUNT} {{
    users: [ {{ user: {SYSTEM_USER}, password: ${password_variable(SYSTEM_USER)} }} ]
  }}
}}
system_account: {SYSTEM_ACCOUNT}

authorization {{
  timeout: {limits.auth_timeout}
  auth_callout {{
    issuer: ${ISSUER_VARIABLE}
    account: {AUTH_ACCOUNT}
    auth_users: [ {", ".join(ALL_USERS)} ]
  }}
}}

jetstream {{
  store_dir: {_q(config.store_dir)}
  domain: {config.jetstream_domain}
  max_memory_store: {config.max_memory_store}
  max_file_store: {config.max_file_store}
}}

# Children's leaf nodes dial in here, TLS only; the callout decides each (user = cluster id).
# no_advertise: a child keeps dialling the address it was given (a load balancer, a NAT), never
# this server's own addresses, which it cannot reach (and which would bypass a partition in tests).
leafnodes {{
  listen: {config.leaf_host}:{config.leaf_port}
  no_advertise: true
  tls {{
    cert_file: {_q(config.leaf_cert)}
    key_file: {_q(config.leaf_key)}{leaf_ca}
    min_version: "1.2"
    timeout: {limits.tls_timeout}
  }}
}}
{cluster}"""


def _cluster_block(cluster: ClusterRoutes) -> str:
    return f"""
# One JetStream cluster of {len(cluster.hosts)} servers (buckets R3: CNET_STREAM_REPLICAS). Each server
# has the same accounts, callout and leaf listener, so a child's leaf node may land on any.
# The route user, its password and the routes (whose URLs carry it) come from {ROUTES_INCLUDE}.
cluster {{
  name: {cluster.name}
  listen: {cluster.host}:{cluster.port}
  include {_q(ROUTES_INCLUDE)}
}}
"""


def routes_include(password: str, cluster: ClusterRoutes, auth_timeout: float = Limits.auth_timeout) -> str:
    """`secrets/routes.conf`: the route user and every route's URL with the route password."""
    routes = "\n".join(f"  {_q(url)}" for url in cluster.urls(password))
    return (
        "# Written by clusternet-nats-init: how the hub's NATS servers route to each other. Keep it private.\n"
        f"authorization {{ user: {ROUTE_USER}, password: {_q(password)}, timeout: {auth_timeout} }}\n"
        f"routes: [\n{routes}\n]\n"
    )


def secrets_include(passwords: Mapping[str, str], issuer_public: str) -> str:
    """`secrets/auth.conf`: the variables `render`'s configuration names, one per user, and the
    callout issuer's public key. Raises KeyError when a user's password is missing."""
    lines = ["# Written by clusternet-nats-init: passwords of the hub's NATS users. Keep it private."]
    lines += [f"{password_variable(user)}: {_q(passwords[user])}" for user in ALL_USERS]
    lines.append(f"{ISSUER_VARIABLE}: {_q(issuer_public)}")
    return "\n".join(lines) + "\n"


LEAF_HOSTS = ("nats", "nats-leaf", "nats.clusternet-system.svc", "nats-leaf.clusternet-system.svc", *pki.LOCAL_HOSTS)
"""Names the leaf port's certificate always carries: the compose service, the Kubernetes
Services and loopback. Add the address children dial (a load balancer's) with `--leaf-host`."""


@dataclass(frozen=True)
class LeafTls:
    """The leaf port's certificate files; `ca` is what children give as `--hub-ca`."""

    ca: Path
    cert: Path
    key: Path


def ensure_leaf_tls(ca_dir: Path, cert_dir: Path, hosts: Sequence[str]) -> LeafTls:
    """The leaf port's CA (kept in `ca_dir`, with its key) and its serving certificate
    (`cert_dir/leaf.crt|key`), created once and reused; the certificate is reissued by the same
    CA only when it misses one of `hosts` or nears expiry, so children keep trusting it."""
    ca = pki.ensure_ca(ca_dir, "clusternet-nats-leaf-ca")
    files = pki.ensure_server_cert(ca, cert_dir, "leaf", list(hosts), common_name="clusternet-nats-hub")
    return LeafTls(ca.files.cert, files.cert, files.key)


SECRETS_DIR = "/etc/nats/secrets"
"""Where the shipped deployments mount the generated secrets beside /etc/nats/nats.conf."""
COMPOSE = HubNatsConfig(
    store_dir="/data",
    leaf_cert=f"{SECRETS_DIR}/leaf.crt",
    leaf_key=f"{SECRETS_DIR}/leaf.key",
)
NATS_CLUSTER_SIZE = 3
KUBERNETES_ROUTES = ClusterRoutes(
    hosts=tuple(f"nats-{i}.nats-cluster.clusternet-system.svc" for i in range(NATS_CLUSTER_SIZE))
)
"""The StatefulSet's pods by their names under the headless Service nats-cluster."""
KUBERNETES = replace(COMPOSE, server_name="$POD_NAME", cluster=KUBERNETES_ROUTES)
"""The parent cluster's: a 3-pod StatefulSet routed into one JetStream cluster, the Secret
mounted at SECRETS_DIR."""
SHIPPED: dict[Path, HubNatsConfig] = {
    Path("compose/nats.conf"): COMPOSE,
    Path("k8s/parent/nats.conf"): KUBERNETES,
}
"""The committed configurations (relative to deploy/) and the inputs they are rendered from."""


def generate() -> dict[Path, str]:
    return {path: render(config) for path, config in SHIPPED.items()}


def main(argv: Sequence[str] | None = None) -> int:
    return generated.main(generate, "clusternet_nats.runtime.natsconf", "deploy", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())

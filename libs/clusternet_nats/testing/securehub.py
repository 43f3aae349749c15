"""A hub nats-server as registration mode runs it, from the configuration that ships.

The configuration is `runtime.natsconf.render`'s, the same text deploy/compose and deploy/k8s run,
with only paths and ports made the test's own; the secrets file and the leaf port's TLS files are
made the way `clusternet-nats-init` makes them. So what the registration, tunnel and isolation
tests prove holds for the shipped configuration: service users listed, every other connection (a
client's or a child leaf node's) decided by the hub's auth callout, TLS on the leaf port.
`SecureHubCluster` runs the same configuration on three servers routed into one JetStream
cluster (deploy/k8s's NATS), each with its own leaf listener.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from clusternet_nats.runtime import natsconf
from clusternet_nats.runtime.natsconf import (
    ALL_USERS,
    APP_ACCOUNT,
    AUTH_ACCOUNT,
    SYSTEM_ACCOUNT,
    ClusterRoutes,
    HubNatsConfig,
    LeafTls,
)
from clusternet_nats.runtime.pki import write_file
from clusternet_nats.testing.natsserver import NatsCluster, NatsServer, free_port

__all__ = ["APP_ACCOUNT", "AUTH_ACCOUNT", "SYSTEM_ACCOUNT", "HubAuth", "HubPki", "SecureHub", "SecureHubCluster"]


@dataclass
class HubAuth:
    """Users and keys of one secured hub; `issuer_seed` signs the callout's answers."""

    issuer_seed: str
    issuer_public: str
    passwords: dict[str, str] = field(default_factory=lambda: {name: secrets.token_hex(12) for name in ALL_USERS})

    def secrets_include(self) -> str:
        return natsconf.secrets_include(self.passwords, self.issuer_public)

    def url(self, server: NatsServer, user: str) -> str:
        return f"nats://{user}:{self.passwords[user]}@127.0.0.1:{server.port}"


@dataclass(frozen=True)
class HubPki:
    """The leaf port's CA (what a child gives as `--hub-ca`) and serving certificate."""

    ca_cert: Path
    server_cert: Path
    server_key: Path


class ShippedNatsServer(NatsServer):
    """A NatsServer whose configuration is `natsconf.render`'s, on this test's ports and paths."""

    def __init__(
        self,
        store_dir: Path,
        auth: HubAuth,
        tls: LeafTls,
        leaf_port: int,
        server_name: str = "hub",
        routes: tuple[ClusterRoutes, str] | None = None,
    ) -> None:
        super().__init__(store_dir=store_dir, server_name=server_name, jetstream_domain=natsconf.JETSTREAM_DOMAIN)
        self.auth = auth
        self.tls = tls
        self.leaf_port = leaf_port
        self.routes = routes
        """The cluster's routes (this server's port is its `port`) and the route password."""

    def hub_config(self) -> HubNatsConfig:
        return HubNatsConfig(
            store_dir=str(self.store_dir / "jetstream"),
            leaf_cert=str(self.tls.cert),
            leaf_key=str(self.tls.key),
            server_name=self.server_name,
            listen_host="127.0.0.1",
            port=self.port,
            leaf_host="127.0.0.1",
            leaf_port=self.leaf_port,
            monitor_port=self.monitor_port,
            cluster=self.routes[0] if self.routes else None,
        )

    def _write_config(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        write_file(self.store_dir / natsconf.SECRETS_INCLUDE, self.auth.secrets_include().encode(), private=True)
        if self.routes:
            routes = natsconf.routes_include(self.routes[1], self.routes[0])
            write_file(self.store_dir / natsconf.ROUTES_INCLUDE, routes.encode(), private=True)
        self.config_path.write_text(natsconf.render(self.hub_config()))


class SecureHub:
    """A hub nats-server (not yet started) with `HubAuth` and a TLS leaf-node listener."""

    def __init__(self, directory: Path, issuer_seed: str, issuer_public: str) -> None:
        self.auth = HubAuth(issuer_seed, issuer_public)
        tls = natsconf.ensure_leaf_tls(directory / "pki", directory / "pki", natsconf.LEAF_HOSTS)
        self.pki = HubPki(tls.ca, tls.cert, tls.key)
        self.leaf_port = free_port()
        self.server = ShippedNatsServer(directory / "nats", self.auth, tls, self.leaf_port)

    @property
    def leaf_url(self) -> str:
        return f"tls://127.0.0.1:{self.leaf_port}"

    def url(self, user: str) -> str:
        return self.auth.url(self.server, user)


class SecureHubCluster:
    """`size` hub servers in one JetStream cluster, each rendered as deploy/k8s renders its pods
    (routes with the route user's password, a leaf listener each); `server` is a NatsCluster."""

    def __init__(self, directory: Path, issuer_seed: str, issuer_public: str, size: int = 3) -> None:
        self.auth = HubAuth(issuer_seed, issuer_public)
        tls = natsconf.ensure_leaf_tls(directory / "pki", directory / "pki", natsconf.LEAF_HOSTS)
        self.pki = HubPki(tls.ca, tls.cert, tls.key)
        route_ports = [free_port() for _ in range(size)]
        hosts = tuple(f"127.0.0.1:{port}" for port in route_ports)
        password = secrets.token_hex(12)
        self.leaf_ports = [free_port() for _ in range(size)]
        self.servers = [
            ShippedNatsServer(
                directory / f"n{i + 1}",
                self.auth,
                tls,
                self.leaf_ports[i],
                server_name=f"hub-{i + 1}",
                routes=(ClusterRoutes(hosts, host="127.0.0.1", port=route_ports[i]), password),
            )
            for i in range(size)
        ]
        self.server = NatsCluster.of(self.servers)

    @property
    def leaf_url(self) -> str:
        """Every server's leaf listener: an agent's leaf node fails over among them."""
        return ",".join(f"tls://127.0.0.1:{port}" for port in self.leaf_ports)

    def url(self, user: str) -> str:
        return ",".join(self.auth.url(server, user) for server in self.servers)

"""`clusternet-nats-init` / `python -m clusternet_nats.hub.natsinit`: the secrets of a first start.

A shipped installation runs the hub's nats-server in registration mode (`runtime/natsconf.py`),
which needs secrets no one should have to make by hand: the auth callout issuer's account seed,
one password per NATS user (each hub-side service its own, the callout's, the system account's,
and the route user's with which the servers of a NATS cluster route to each other),
the leaf port's TLS CA and certificate, and a bootstrap token so a first agent can register
before anyone could have called the hub's API to create one. This command makes them, once:

* State (the canonical values, one file each, mode 0600) is kept in `DIR/init/`, or in one
  Kubernetes Secret (`--kubernetes-secret`, same keys). What exists is kept, what is missing is
  made, and the leaf certificate is reissued by the same CA only to add a `--leaf-host`; so a
  second run changes nothing and a restart never breaks a registered cluster's trust.
* From the state, each consumer gets only its own files, in `DIR/<consumer>/` (deploy/compose
  mounts each directory, a volume, into that one container): `nats/` the include file
  `auth.conf` and the leaf certificate; `hub/`, `scheduler/`, ... an `env` file of CNET_*
  variables (its NATS URL with its user and password; the hub's issuer seed, callout and system
  URLs, bootstrap token file and `token-auth.csv`, an admin bearer token of its HTTP API);
  `agent/` the bootstrap token, the leaf URL and the hub's CA. In a Secret
  the Deployments pick their keys (deploy/k8s/parent).

Files are written atomically and only when their content differs.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import shlex
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import structlog
import typer
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.records import new_token
from clusternet_nats.kube.rest import connect
from clusternet_nats.runtime import natsconf
from clusternet_nats.runtime.logging import configure_logging
from clusternet_nats.runtime.pki import write_file

log = structlog.get_logger(__name__)

ISSUER_SEED = "issuer-seed"
BOOTSTRAP_TOKEN = "bootstrap-token"
ADMIN_TOKEN = "hub-admin-token"
"""A bearer token of the hub's HTTP API for user admin (group system:masters)."""
CA_CERT, CA_KEY = "ca.crt", "ca.key"
LEAF_CERT, LEAF_KEY = "leaf.crt", "leaf.key"
AUTH_CONF = "auth.conf"
"""Derived from the passwords and the issuer; kept in the Secret so nats-server can mount it."""
ROUTES_CONF = "routes.conf"
"""Derived from the route password: the route block's secret half for deploy/k8s's NATS cluster."""
ENV_FILE = "env"
TOKENS_FILE = "bootstrap-tokens"
TOKEN_AUTH_FILE = "token-auth.csv"
DERIVED = (AUTH_CONF, TOKEN_AUTH_FILE, ROUTES_CONF)
"""Keys of the Secret made from the state rather than kept as state."""
HUB_CA = "hub-ca.crt"
SECRET_NAME = "clusternet-nats-secrets"
CONSUMERS = ("nats", *natsconf.SERVICE_USERS, "agent")
PUBLIC = frozenset({CA_CERT, LEAF_CERT, HUB_CA})
"""Certificates are public; every other file is written mode 0600."""


def password_key(user: str) -> str:
    return f"password-{user}"


def state_keys() -> list[str]:
    """Every key of the state, in the order they are listed."""
    return [
        ISSUER_SEED,
        *(password_key(u) for u in natsconf.ALL_USERS),
        password_key(natsconf.ROUTE_USER),
        BOOTSTRAP_TOKEN,
        ADMIN_TOKEN,
        CA_CERT,
        CA_KEY,
        LEAF_CERT,
        LEAF_KEY,
    ]


@dataclass(frozen=True)
class Layout:
    """How the consumers reach the server and see their files."""

    nats_host: str = "nats"
    nats_port: int = natsconf.COMPOSE.port
    leaf_port: int = natsconf.COMPOSE.leaf_port
    mount_path: str | None = None
    """Where each consumer's directory is mounted in its container (default: where it is written)."""


def _password() -> str:
    return secrets.token_urlsafe(24)  # URL-safe: it goes into nats:// URLs as it is


def ensure_state(directory: Path, leaf_hosts: list[str]) -> list[str]:
    """Makes what is missing of the state in `directory` and returns the keys it wrote."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    written: list[str] = []

    def ensure(key: str, make: Callable[[], str]) -> None:
        if not (directory / key).exists():
            write_file(directory / key, make().encode(), private=True)
            written.append(key)

    ensure(ISSUER_SEED, jwt.new_account_seed)
    for user in (*natsconf.ALL_USERS, natsconf.ROUTE_USER):
        ensure(password_key(user), _password)
    ensure(BOOTSTRAP_TOKEN, lambda: new_token(None, "clusternet-nats-init")[0])
    ensure(ADMIN_TOKEN, lambda: secrets.token_urlsafe(32))
    before = {key: _read(directory / key) for key in (CA_CERT, CA_KEY, LEAF_CERT, LEAF_KEY)}
    hosts = list(dict.fromkeys([*natsconf.LEAF_HOSTS, *leaf_hosts]))
    natsconf.ensure_leaf_tls(directory, directory, hosts)
    written += [key for key, data in before.items() if _read(directory / key) != data]
    return written


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def read_state(directory: Path) -> dict[str, bytes]:
    return {key: (directory / key).read_bytes() for key in state_keys()}


def _text(state: Mapping[str, bytes], key: str) -> str:
    return state[key].decode().strip()


def auth_conf(state: Mapping[str, bytes]) -> bytes:
    passwords = {user: _text(state, password_key(user)) for user in natsconf.ALL_USERS}
    return natsconf.secrets_include(passwords, jwt.public_key(_text(state, ISSUER_SEED))).encode()


def token_auth_csv(state: Mapping[str, bytes]) -> bytes:
    """The hub's `--token-auth-file` (kube-apiserver's format, token,user,uid,"groups"): the admin."""
    return f'{_text(state, ADMIN_TOKEN)},admin,admin,"system:masters"\n'.encode()


def routes_conf(state: Mapping[str, bytes]) -> bytes:
    """The shipped NATS cluster's routes (deploy/k8s/parent), with the route password."""
    password = _text(state, password_key(natsconf.ROUTE_USER))
    return natsconf.routes_include(password, natsconf.KUBERNETES_ROUTES).encode()


def derived(state: Mapping[str, bytes]) -> dict[str, bytes]:
    """Files made from the state that consumers mount as they are."""
    return {AUTH_CONF: auth_conf(state), TOKEN_AUTH_FILE: token_auth_csv(state), ROUTES_CONF: routes_conf(state)}


def _env(values: Mapping[str, str]) -> bytes:
    """`KEY='value'` lines: what `set -a; . FILE` exports in a shell, and what dotenv readers take."""
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items()).encode()


def consumer_files(state: Mapping[str, bytes], layout: Layout, root: Path) -> dict[Path, bytes]:
    """Each consumer's files, by path under `root`."""

    def mounted(consumer: str, name: str) -> str:
        return f"{layout.mount_path or root / consumer}/{name}"

    def url(user: str) -> str:
        return f"nats://{user}:{_text(state, password_key(user))}@{layout.nats_host}:{layout.nats_port}"

    files: dict[Path, bytes] = {
        root / "nats" / AUTH_CONF: auth_conf(state),
        root / "nats" / LEAF_CERT: state[LEAF_CERT],
        root / "nats" / LEAF_KEY: state[LEAF_KEY],
    }
    for service in natsconf.SERVICE_USERS:
        files[root / service / ENV_FILE] = _env({"CNET_NATS_URL": url(service)})
    files[root / "hub" / ENV_FILE] = _env(
        {
            "CNET_NATS_URL": url("hub"),
            "CNET_JETSTREAM_DOMAIN": natsconf.JETSTREAM_DOMAIN,
            "CNET_HUB_ISSUER_SEED": _text(state, ISSUER_SEED),
            "CNET_HUB_CALLOUT_URL": url(natsconf.CALLOUT_USER),
            "CNET_HUB_SYSTEM_URL": url(natsconf.SYSTEM_USER),
            "CNET_HUB_BOOTSTRAP_TOKEN_FILE": mounted("hub", TOKENS_FILE),
            "CNET_HUB_TOKEN_AUTH_FILE": mounted("hub", TOKEN_AUTH_FILE),
        }
    )
    files[root / "hub" / TOKENS_FILE] = state[BOOTSTRAP_TOKEN].strip() + b"\n"
    files[root / "hub" / TOKEN_AUTH_FILE] = token_auth_csv(state)
    files[root / "agent" / HUB_CA] = state[CA_CERT]
    files[root / "agent" / ENV_FILE] = _env(
        {
            "CNET_AGENT_BOOTSTRAP_TOKEN": _text(state, BOOTSTRAP_TOKEN),
            "CNET_AGENT_HUB_LEAF_URL": f"tls://{layout.nats_host}:{layout.leaf_port}",
            "CNET_AGENT_HUB_CA": mounted("agent", HUB_CA),
            "CNET_JETSTREAM_DOMAIN": natsconf.JETSTREAM_DOMAIN,
        }
    )
    return files


def write_if_changed(path: Path, data: bytes) -> bool:
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    write_file(path, data, private=path.name not in PUBLIC)
    return True


def init_directory(root: Path, layout: Layout, leaf_hosts: list[str]) -> list[Path]:
    """The state in `root/init` and every consumer's files; returns the paths it changed."""
    root.mkdir(parents=True, exist_ok=True)
    written = [root / "init" / key for key in ensure_state(root / "init", leaf_hosts)]
    state = read_state(root / "init")
    written += [path for path, data in consumer_files(state, layout, root).items() if write_if_changed(path, data)]
    return written


def secret_data(state: Mapping[str, bytes]) -> dict[str, str]:
    """The Secret's `data`: the state and the files derived from it, base64."""
    values = {**state, **derived(state)}
    return {key: base64.b64encode(data).decode() for key, data in values.items()}


async def init_secret(kubeconfig: Path | None, namespace: str, name: str, leaf_hosts: list[str]) -> bool:
    """The state in the Secret `namespace/name`, created or completed; True if it wrote it.

    The Secret is read into a private temporary directory, completed there as a directory would
    be, and written back only when that changed something, so a rerun Job is a no-op."""
    api = await connect(kubeconfig)
    path = f"/api/v1/namespaces/{namespace}/secrets/{name}"
    try:
        current = await api.get(path) or {}
        stored = {k: base64.b64decode(v) for k, v in (current.get("data") or {}).items()}

        def complete() -> dict[str, str]:
            with tempfile.TemporaryDirectory(prefix="cnet-nats-init-") as tmp:
                for key in state_keys():
                    if key in stored:
                        write_file(Path(tmp) / key, stored[key], private=True)
                ensure_state(Path(tmp), leaf_hosts)
                return secret_data(read_state(Path(tmp)))

        data = await asyncio.to_thread(complete)
        if current and current.get("data") == data:
            log.info("natsinit.secret_unchanged", secret=f"{namespace}/{name}")
            return False
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/part-of": "clusternet-nats"},
                **({"resourceVersion": current["metadata"]["resourceVersion"]} if current else {}),
            },
            "data": data,
        }
        if current:
            await api.request("PUT", path, body=body)
        else:
            await api.request("POST", f"/api/v1/namespaces/{namespace}/secrets", body=body)
        log.info("natsinit.secret_written", secret=f"{namespace}/{name}", created=not current)
        return True
    finally:
        await api.close()


def _namespace() -> str:
    """The pod's own namespace when in a cluster, else clusternet-system."""
    path = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    return path.read_text().strip() if path.exists() else "clusternet-system"


app = typer.Typer(add_completion=False)


def _env_option(flag: str, help_: str) -> Any:
    env = "CNET_NATS_INIT_" + flag.removeprefix("--").upper().replace("-", "_")
    return typer.Option(flag, envvar=env, help=help_)


@app.command()
def natsinit(
    directory: Annotated[
        Path | None, typer.Argument(help="Write the state and each consumer's files here (not with a Secret).")
    ] = None,
    nats_host: Annotated[str, _env_option("--nats-host", "Host the services dial for NATS.")] = "nats",
    nats_port: Annotated[int, _env_option("--nats-port", "NATS client port.")] = natsconf.COMPOSE.port,
    leaf_port: Annotated[int, _env_option("--leaf-port", "NATS leaf-node port.")] = natsconf.COMPOSE.leaf_port,
    leaf_hosts: Annotated[
        list[str] | None,
        _env_option("--leaf-host", "Another name or IP children dial the leaf port at (repeatable)."),
    ] = None,
    mount_path: Annotated[
        str | None, _env_option("--mount-path", "Where each consumer's directory is mounted in its container.")
    ] = None,
    kubernetes_secret: Annotated[
        str | None, _env_option("--kubernetes-secret", "Keep the state in this Secret instead of a directory.")
    ] = None,
    namespace: Annotated[str | None, _env_option("--namespace", "The Secret's namespace (default: the pod's).")] = None,
    kubeconfig: Annotated[
        Path | None, typer.Option(envvar="CNET_KUBECONFIG", help="Cluster of the Secret (default: in-cluster).")
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", envvar="CNET_LOG_LEVEL")] = "info",
) -> None:
    """Makes the hub's NATS secrets once (idempotent): issuer seed, passwords, leaf TLS, a token."""
    configure_logging(log_level)
    hosts = [h for arg in leaf_hosts or [] for h in arg.split(",") if h]
    if kubernetes_secret:
        if directory is not None:
            raise typer.BadParameter("give a DIRECTORY or --kubernetes-secret, not both")
        asyncio.run(init_secret(kubeconfig, namespace or _namespace(), kubernetes_secret, hosts))
        return
    if directory is None:
        raise typer.BadParameter("give a DIRECTORY (or --kubernetes-secret NAME)")
    changed = init_directory(directory, Layout(nats_host, nats_port, leaf_port, mount_path), hosts)
    log.info("natsinit.directory", directory=str(directory), changed=[str(p.relative_to(directory)) for p in changed])


def main() -> None:
    app()


if __name__ == "__main__":
    main()

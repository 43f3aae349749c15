"""cnet's config file: kubeconfig's shape (clusters, users, contexts, current-context) for the hub.

Found at `--config`, else `$CNET_CONFIG`, else `~/.cnet/config`; the same field names as a
kubeconfig (`server`, `certificate-authority[-data]`, `insecure-skip-tls-verify`, `token`,
`client-certificate`, `client-key`), so anyone who has edited one can edit this.
Relative paths are relative to the file, as kubectl reads them. `make up` merges a context here.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from clusternet_nats.api.yamljson import DecodeError, load_yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

ENV = "CNET_CONFIG"
DEFAULT_SERVER = "https://127.0.0.1:8080"


def default_path() -> Path:
    return Path(os.environ.get(ENV) or Path.home() / ".cnet" / "config")


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class Cluster(_Model):
    server: str
    certificate_authority: str | None = Field(None, alias="certificate-authority")
    certificate_authority_data: str | None = Field(None, alias="certificate-authority-data")
    insecure_skip_tls_verify: bool = Field(False, alias="insecure-skip-tls-verify")


class User(_Model):
    token: str | None = None
    client_certificate: str | None = Field(None, alias="client-certificate")
    client_key: str | None = Field(None, alias="client-key")


class Context(_Model):
    cluster: str
    user: str = ""


class NamedCluster(_Model):
    name: str
    cluster: Cluster


class NamedUser(_Model):
    name: str
    user: User


class NamedContext(_Model):
    name: str
    context: Context


class CnetConfig(_Model):
    api_version: str = Field("v1", alias="apiVersion")
    kind: str = "Config"
    clusters: list[NamedCluster] = []
    users: list[NamedUser] = []
    contexts: list[NamedContext] = []
    current_context: str = Field("", alias="current-context")

    def context(self, name: str) -> Context | None:
        return next((c.context for c in self.contexts if c.name == name), None)

    def cluster(self, name: str) -> Cluster | None:
        return next((c.cluster for c in self.clusters if c.name == name), None)

    def user(self, name: str) -> User | None:
        return next((u.user for u in self.users if u.name == name), None)

    def dump(self) -> str:
        data = self.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False)
        return yaml.safe_dump(data, sort_keys=False)


class ConfigError(Exception):
    """The config file or the context asked for is unusable; `str()` is the line to show."""


def load(path: Path) -> CnetConfig:
    """The config at `path`; an empty one when the file does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return CnetConfig()
    except OSError as err:
        raise ConfigError(f"error: cannot read {path}: {err.strerror}") from None
    try:
        return CnetConfig.model_validate(load_yaml(data) or {})
    except (DecodeError, ValidationError) as err:
        raise ConfigError(f"error: {path} is not a valid cnet config: {err}") from None


def save(path: Path, config: CnetConfig) -> None:
    """Writes atomically and private (0600): the file holds tokens."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(config.dump())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _upsert(items: list[Any], named: Any) -> list[Any]:
    return [*(i for i in items if i.name != named.name), named]


def merge(config: CnetConfig, name: str, cluster: Cluster, user: User, use: bool = True) -> CnetConfig:
    """`config` with a cluster, user and context all called `name` added or replaced (and made current)."""
    return config.model_copy(
        update={
            "clusters": _upsert(config.clusters, NamedCluster(name=name, cluster=cluster)),
            "users": _upsert(config.users, NamedUser(name=name, user=user)),
            "contexts": _upsert(config.contexts, NamedContext(name=name, context=Context(cluster=name, user=name))),
            "current_context": name if use else config.current_context,
        }
    )


def write_context(path: Path, name: str, cluster: Cluster, user: User, use: bool = True) -> None:
    """Merges one context into the file at `path` (created if missing), leaving the others as they were."""
    save(path, merge(load(path), name, cluster, user, use))


@dataclass(frozen=True)
class ClientSettings:
    """Everything needed to reach and authenticate to one hub."""

    server: str = DEFAULT_SERVER
    certificate_authority: Path | None = None
    certificate_authority_data: str | None = None
    insecure_skip_tls_verify: bool = False
    token: str | None = None
    client_certificate: Path | None = None
    client_key: Path | None = None


@dataclass(frozen=True)
class Overrides:
    """Flags given on the command line; each replaces what the context says."""

    server: str | None = None
    certificate_authority: Path | None = None
    insecure_skip_tls_verify: bool = False
    token: str | None = None
    client_certificate: Path | None = None
    client_key: Path | None = None


def _path(base: Path, value: str | None) -> Path | None:
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def settings(config: CnetConfig, path: Path, context_name: str | None, overrides: Overrides) -> ClientSettings:
    """The settings of `context_name` (else the current context), with `overrides` on top."""
    name = context_name or config.current_context
    result = ClientSettings()
    if name:
        context = config.context(name)
        if context is None:
            raise ConfigError(f'error: context "{name}" does not exist in {path}')
        cluster = config.cluster(context.cluster)
        if cluster is None:
            raise ConfigError(f'error: cluster "{context.cluster}" of context "{name}" does not exist in {path}')
        user = config.user(context.user) or User()
        base = path.parent
        result = ClientSettings(
            server=cluster.server,
            certificate_authority=_path(base, cluster.certificate_authority),
            certificate_authority_data=cluster.certificate_authority_data,
            insecure_skip_tls_verify=cluster.insecure_skip_tls_verify,
            token=user.token,
            client_certificate=_path(base, user.client_certificate),
            client_key=_path(base, user.client_key),
        )
    # As kubectl: a flag replaces one field and keeps the rest (--server keeps the context's CA and token).
    return replace(result, **{k: v for k, v in vars(overrides).items() if v})


def ca_data_pem(data: str) -> str:
    """`certificate-authority-data` is base64 of PEM, as in a kubeconfig."""
    try:
        return base64.b64decode(data, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise ConfigError("error: certificate-authority-data is not base64-encoded PEM") from None

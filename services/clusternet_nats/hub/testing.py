"""The hub served from the caller's event loop, for tests of the hub and of clients like `cnet`.

It runs the real service (the same `build`, ServiceContext and lifecycle as the process) on a
free port, over HTTPS with a CA generated at start, and yields once it listens, so tests never
guess ports or sleep. Users are static tokens (an `admin` in `system:masters`, plus any asked
for) and client certificates signed by a client CA of its own; `ServedHub` hands out sessions,
SSL contexts and cnet configs for any of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from clusternet_nats.cli import config as cnet_config
from clusternet_nats.hub.auth.options import SecurityOptions
from clusternet_nats.hub.auth.user import SYSTEM_MASTERS
from clusternet_nats.hub.service import HubServer, build
from clusternet_nats.runtime import pki
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.system import token_file_line
from clusternet_nats.testing.waiting import eventually

ADMIN = "admin"


@dataclass
class ServedHub:
    url: str
    ca_file: Path
    """The generated CA that signed the hub's serving certificate."""
    tokens: dict[str, str]
    """User name to bearer token; `admin` is in system:masters."""
    client_ca: pki.CertificateAuthority
    """Signs client certificates the hub accepts (`client_cert`)."""
    workdir: Path
    server: HubServer
    options: SecurityOptions
    _configs: dict[str, Path] = field(default_factory=dict)

    @property
    def admin_token(self) -> str:
        return self.tokens[ADMIN]

    def client_cert(self, user: str, groups: Sequence[str] = (), **kwargs: Any) -> pki.KeyPair:
        """A client certificate for `user` in `groups` (kwargs: e.g. `validity`), signed by the client CA."""
        directory = self.workdir / "clients"
        directory.mkdir(exist_ok=True)
        return pki.issue_client_cert(
            self.client_ca, directory, user, groups, stem=f"{user}-{secrets.token_hex(3)}", **kwargs
        )

    def ssl_context(self, cert: pki.KeyPair | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        if cert is not None:
            context.load_cert_chain(cert.cert, cert.key)
        return context

    def headers(self, user: str | None = ADMIN) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}

    def session(
        self, user: str | None = ADMIN, cert: pki.KeyPair | None = None, token: str | None = None
    ) -> aiohttp.ClientSession:
        """A session with `user`'s token (or `token`, or no token with user None) and optional client cert."""
        headers = {"Authorization": f"Bearer {token}"} if token else self.headers(user)
        connector = aiohttp.TCPConnector(ssl=self.ssl_context(cert))
        return aiohttp.ClientSession(base_url=self.url, headers=headers, connector=connector)

    def cnet_config(self, user: str = ADMIN) -> Path:
        """A cnet config file whose current context is this hub as `user`."""
        if user not in self._configs:
            path = self.workdir / "cnet" / f"{user}.yaml"
            cluster = cnet_config.Cluster(server=self.url, certificate_authority=str(self.ca_file))
            cnet_config.write_context(path, "test-hub", cluster, cnet_config.User(token=self.tokens[user]))
            self._configs[user] = path
        return self._configs[user]

    def cnet_args(self, user: str = ADMIN) -> list[str]:
        """The global flags that point `cnet` at this hub as `user`."""
        return ["--config", str(self.cnet_config(user))]


@contextlib.asynccontextmanager
async def running_hub(
    nats_url: str,
    users: Mapping[str, Sequence[str]] | None = None,
    policy: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[ServedHub]:
    """The hub with a token file for `admin` and each of `users` (name to groups), `policy` as its
    `--authorization-policy-file`, and further SecurityOptions fields as keyword arguments."""
    workdir = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="cnet-hub-"))
    try:
        tokens = {ADMIN: secrets.token_urlsafe(24), **{name: secrets.token_urlsafe(24) for name in users or {}}}
        groups = {ADMIN: [SYSTEM_MASTERS], **{name: list(g) for name, g in (users or {}).items()}}
        client_ca = await asyncio.to_thread(pki.ensure_ca, workdir / "client-ca", "test-clients-ca")
        token_file = workdir / "tokens.csv"
        lines = "".join(token_file_line(token, name, groups[name]) for name, token in tokens.items())
        await asyncio.to_thread(token_file.write_text, lines)
        if policy is not None:
            policy_file = workdir / "policy.yaml"
            await asyncio.to_thread(policy_file.write_text, yaml.safe_dump(dict(policy)))
            options.setdefault("authorization_policy_file", policy_file)
        options.setdefault("cert_dir", workdir / "serving")
        options.setdefault("token_auth_file", token_file)
        options.setdefault("client_ca_file", client_ca.files.cert)
        security = SecurityOptions(**options)
        servers: list[HubServer] = []

        async def build_on_free_port(ctx: ServiceContext) -> None:
            servers.append(await build(ctx, "127.0.0.1:0", security))

        def url() -> str:
            return (servers[0].url or "") if servers else ""

        async with running_service("clusternet-hub", build_on_free_port, nats_url):
            served = ServedHub(
                url=await eventually(url, timeout=30, what="hub listening"),
                ca_file=(servers[0].security.ca_file if servers[0].security else None) or security.cert_dir / "ca.crt",
                tokens=tokens,
                client_ca=client_ca,
                workdir=workdir,
                server=servers[0],
                options=security,
            )
            yield served
    finally:
        await asyncio.to_thread(shutil.rmtree, workdir, True)

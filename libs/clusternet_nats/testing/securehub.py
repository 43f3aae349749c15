"""A hub nats-server as registration mode runs it: accounts, auth callout, a TLS leaf port.

Service users (hub services, the callout, the system account) are listed in the config; every
other connection, a client's or a child leaf node's, is decided by the hub's auth callout.
Certificates come from `kubecerts.write_pki`, so the tests need no openssl.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from clusternet_nats.testing.kubecerts import Pki, write_pki
from clusternet_nats.testing.natsserver import NatsServer, free_port

APP_ACCOUNT = "CLUSTERNET"
AUTH_ACCOUNT = "AUTH"
SYSTEM_ACCOUNT = "SYS"


@dataclass
class HubAuth:
    """Users and keys of one secured hub; `issuer_seed` signs the callout's answers."""

    issuer_seed: str
    issuer_public: str
    passwords: dict[str, str] = field(
        default_factory=lambda: {name: secrets.token_hex(12) for name in ("hub", "callout", "sys")}
    )

    def config(self, leaf_port: int | None = None, pki: Pki | None = None) -> str:
        p = self.passwords
        leaf = ""
        if leaf_port is not None:
            tls = f'tls {{ cert_file: "{pki.server_cert}", key_file: "{pki.server_key}" }}' if pki is not None else ""
            leaf = f"leafnodes {{\n  listen: 127.0.0.1:{leaf_port}\n  {tls}\n}}"
        return f"""
accounts {{
  {APP_ACCOUNT} {{ jetstream: enabled, users: [ {{ user: hub, password: "{p["hub"]}" }} ] }}
  {AUTH_ACCOUNT} {{ users: [ {{ user: callout, password: "{p["callout"]}" }} ] }}
  {SYSTEM_ACCOUNT} {{ users: [ {{ user: sys, password: "{p["sys"]}" }} ] }}
}}
system_account: {SYSTEM_ACCOUNT}
authorization {{
  auth_callout {{ issuer: {self.issuer_public}, account: {AUTH_ACCOUNT}, auth_users: [ hub, callout, sys ] }}
}}
{leaf}
"""

    def url(self, server: NatsServer, user: str) -> str:
        return f"nats://{user}:{self.passwords[user]}@127.0.0.1:{server.port}"


class SecureHub:
    """A started hub nats-server with `HubAuth` and a TLS leaf-node listener."""

    def __init__(self, directory: Path, issuer_seed: str, issuer_public: str) -> None:
        self.auth = HubAuth(issuer_seed, issuer_public)
        self.pki = write_pki(directory / "pki", "hub")
        self.leaf_port = free_port()
        self.server = NatsServer(
            store_dir=directory / "nats",
            extra_config=self.auth.config(self.leaf_port, self.pki),
            jetstream_domain="hub",
        )

    @property
    def leaf_url(self) -> str:
        return f"tls://127.0.0.1:{self.leaf_port}"

    def url(self, user: str) -> str:
        return self.auth.url(self.server, user)

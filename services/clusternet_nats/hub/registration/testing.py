"""A secured hub for tests and benchmarks: a real nats-server with accounts, auth callout and a
TLS leaf port, and the hub's registration services running in the caller's event loop.

Beside `hub/testing.py` (the HTTP hub) because it needs the hub's registration package, which
`libs/clusternet_nats/testing` may not import.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import nats
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.callout import AuthCallout
from clusternet_nats.hub.registration.records import new_token, token_store
from clusternet_nats.hub.registration.service import RegistrationOptions, build_registration
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.securehub import SecureHub, SecureHubCluster
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS


@dataclass
class RegistrationHub:
    secure: SecureHub | SecureHubCluster
    nc: NATS
    callout: AuthCallout

    async def token(self, ttl: timedelta | None = timedelta(hours=1)) -> str:
        token, record = new_token(ttl)
        await token_store(self.nc.jetstream()).put(record.token_id, record, 0)
        return token


@contextlib.asynccontextmanager
async def secured_hub(
    directory: Path, manual_approval: bool = False, nats_cluster: int = 1
) -> AsyncIterator[RegistrationHub]:
    """`nats_cluster` > 1: that many servers in one JetStream cluster, buckets R3 (min(n, 3))."""
    seed = jwt.new_account_seed()
    secure = (
        SecureHubCluster(directory, seed, jwt.public_key(seed), nats_cluster)
        if nats_cluster > 1
        else SecureHub(directory, seed, jwt.public_key(seed))
    )
    secure.server.start()
    built: list[AuthCallout] = []

    async def build(ctx: ServiceContext) -> None:
        options = RegistrationOptions(
            seed, secure.url("callout"), secure.url("sys"), jetstream_domain="hub", manual_approval=manual_approval
        )
        built.append(await build_registration(ctx, options))

    try:
        async with running_service("clusternet-hub", build, secure.url("hub"), min(nats_cluster, 3)):
            nc = await nats.connect(servers=secure.url("hub").split(","))
            try:
                await eventually(lambda: bool(built), timeout=10, what="registration services built")
                yield RegistrationHub(secure, nc, built[0])
            finally:
                await nc.close()
    finally:
        secure.server.cleanup()

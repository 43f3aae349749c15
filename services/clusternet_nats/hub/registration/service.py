"""Registration mode of the hub: the auth callout, the registrar and the revoker, together.

Enabled by giving the hub an issuer seed: the callout needs its own connection (to the
callout account the server's auth_callout names) and kicking needs the system account's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from clusternet_nats.hub.intake import Intake
from clusternet_nats.hub.registration.callout import DEFAULT_CREDENTIAL_TTL, AuthCallout
from clusternet_nats.hub.registration.penalties import Penalties
from clusternet_nats.hub.registration.records import (
    CREDENTIALS_BUCKET,
    ClusterCredential,
    ensure_registration_buckets,
)
from clusternet_nats.hub.registration.registrar import Registrar
from clusternet_nats.hub.registration.revoker import Revoker
from clusternet_nats.hub.registration.tokenfile import store_token_file
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store.buckets import StoreLayout


@dataclass(frozen=True)
class RegistrationOptions:
    issuer_seed: str
    """Account nkey seed whose public key is the server's auth_callout issuer."""
    callout_url: str
    """NATS URL with the user of the auth_callout account."""
    system_url: str | None = None
    """NATS URL with a system-account user, to drop a deleted cluster's connections."""
    credential_ttl: float = DEFAULT_CREDENTIAL_TTL
    jetstream_domain: str | None = None
    manual_approval: bool = False
    """Leave requests Pending until `cnet approve|deny clsrr NAME`."""
    """The hub's JetStream domain, which clusters behind leaf nodes address."""
    bootstrap_token_file: Path | None = None
    """Bootstrap tokens stored at start (`tokenfile.py`), so a first agent needs no API call."""
    cluster_init: bool = False
    """The ClusterInit feature gate: new clusters are created with the initialization taint."""


async def build_registration(ctx: ServiceContext, options: RegistrationOptions) -> AuthCallout:
    await ensure_registration_buckets(ctx.js, StoreLayout(replicas=ctx.options.stream_replicas))
    if options.bootstrap_token_file is not None:
        await store_token_file(ctx.js, options.bootstrap_token_file)
    callout_conn = Connection(options.callout_url, f"{ctx.name}/auth-callout")
    system_conn = Connection(options.system_url, f"{ctx.name}/system") if options.system_url else None
    # A cluster flooding the intake is kicked (by the revoker) and refused (by the callout) a while.
    penalties = Penalties()
    callout = AuthCallout(
        await callout_conn.connect(),
        ctx.js,
        options.issuer_seed,
        ttl=options.credential_ttl,
        domain=options.jetstream_domain,
        penalties=penalties,
        registered=ctx.records(CREDENTIALS_BUCKET, ClusterCredential),  # the intake's informer, shared
    )
    await callout.start()
    await Registrar(ctx.nc, ctx.js, options.manual_approval, cluster_init=options.cluster_init).start()
    revoker = Revoker(ctx, await system_conn.connect() if system_conn else None)
    penalties.kick = revoker.kick
    Intake(ctx, penalties)

    async def close_on_shutdown() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            # Closed, not drained: a sweep still kicking must fail fast, not hold up shutdown.
            for conn in (callout_conn, system_conn):
                if conn is not None and conn.nc is not None:
                    await conn.nc.close()

    ctx.run_forever(close_on_shutdown)
    return callout

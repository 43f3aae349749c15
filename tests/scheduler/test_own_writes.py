"""The scheduler knows its own binding writes at once, not when their echo comes back: with its
bindings informer behind (here: never started; in a JetStream cluster, one whose consumer could
not be made for a minute), a second write of the same Subscription's binding is an update of the
first, not a creation refused as already existing until the key is parked."""

from __future__ import annotations

from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.service import CommonOptions, ServiceContext
from clusternet_nats.scheduler.config import SchedulerConfiguration
from clusternet_nats.scheduler.framework.interfaces import EMPTY_HANDLE
from clusternet_nats.scheduler.framework.registry import PluginContext
from clusternet_nats.scheduler.profiles import build_profiles
from clusternet_nats.scheduler.reconciler import SubscriptionScheduler
from clusternet_nats.store import BINDINGS_BUCKET, StatusStore
from clusternet_nats.store.buckets import ensure_buckets
from clusternet_nats.testing.natsserver import NatsServer

from tests.scheduler.conftest import build_subscription


async def test_a_second_write_before_the_echo_updates_the_first(private_nats: NatsServer) -> None:
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    try:
        ctx = ServiceContext("clusternet-scheduler", CommonOptions(nats_url=private_nats.url), conn, nc)
        await ensure_buckets(ctx.js)
        profiles = build_profiles(SchedulerConfiguration(), context=PluginContext(handle=EMPTY_HANDLE, service=ctx))
        scheduler = SubscriptionScheduler(ctx, profiles)
        sub = build_subscription("app", "own-writes", [])
        first = SubscriptionBinding(subscription_uid=sub.metadata.uid or "", spec_hash=1)
        second = first.model_copy(update={"spec_hash": 2})
        assert await scheduler.write_binding(sub, first)
        assert await scheduler.write_binding(sub, second)
        assert not await scheduler.write_binding(sub, second), "an unchanged binding is not written again"
        stored = await StatusStore(ctx.js, BINDINGS_BUCKET, SubscriptionBinding).get("own-writes.app")
        assert stored is not None and stored.value == second
    finally:
        await conn.close()

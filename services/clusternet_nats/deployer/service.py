"""Wiring of the deployer: informers and indexes, the Subscription queue, the orphan sweep, the pusher."""

from __future__ import annotations

from clusternet_nats.deployer.caches import Caches
from clusternet_nats.deployer.deletion import FeedDeletion
from clusternet_nats.deployer.gc import ORPHANS, OrphanSweep
from clusternet_nats.deployer.pusher import Pusher
from clusternet_nats.deployer.reconciler import Deployer
from clusternet_nats.deployer.writes import PARALLELISM
from clusternet_nats.runtime.service import ServiceContext

WORKERS = 4


async def build(ctx: ServiceContext, feed_in_use_protection: bool = False, parallelism: int = PARALLELISM) -> None:
    caches = Caches(ctx)
    deployer = Deployer(ctx, caches, feed_in_use_protection, parallelism)
    statuses = deployer.status
    orphans = OrphanSweep(ctx, caches)
    FeedDeletion(ctx, caches)
    Pusher(ctx, caches)

    async def parked(key: str, err: BaseException) -> None:
        sub = caches.subscriptions.get(key)
        if sub is not None:
            await ctx.recorder.warning(sub, "FailedSynced", f"failed to sync Subscription {key}: {err}")

    subscriptions = ctx.queue("deployer-subscriptions", deployer.reconcile, workers=WORKERS, on_parked=parked)
    sweeps = ctx.queue("deployer-orphans", orphans.sweep, workers=1)
    caches.watch(subscriptions.add, lambda: sweeps.add(ORPHANS), statuses.status_changed)

    async def sweep_once_started() -> None:
        sweeps.add(ORPHANS)

    ctx.run_forever(sweep_once_started)

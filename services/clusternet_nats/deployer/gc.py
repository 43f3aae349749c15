"""Garbage collection of what deleted Subscriptions left behind, found by labels alone.

A Base, Description or HelmRelease the deployer derived carries its Subscription's uid; when no Subscription
with that uid exists it is an orphan, whether the deletion was seen or happened while the
deployer was down. The same goes for a `subscriptions-status` key without its Subscription. The
sweep runs at start and whenever a change shows an orphan, so nothing relies on delete events.
"""

from __future__ import annotations

from typing import TypeVar

import structlog
from clusternet_nats.api.apps import Base, Description, HelmRelease, SubscriptionStatus
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.caches import Caches, owner_uid
from clusternet_nats.deployer.statussync import SUBSCRIPTION_STATUS_BUCKET
from clusternet_nats.deployer.writes import remove
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import Informer, ObjectStore, StatusStore

log = structlog.get_logger(__name__)
Derived = TypeVar("Derived", Base, Description, HelmRelease)

ORPHANS = "orphans"
"""The one key of the sweep's work queue: a sweep covers everything, so requests merge."""


class OrphanSweep:
    def __init__(self, ctx: ServiceContext, caches: Caches) -> None:
        self.caches = caches
        self.bases: ObjectStore[Base] = ObjectStore(ctx.js, KindInfo.of(Base))
        self.descriptions: ObjectStore[Description] = ObjectStore(ctx.js, KindInfo.of(Description))
        self.helm_releases: ObjectStore[HelmRelease] = ObjectStore(ctx.js, KindInfo.of(HelmRelease))
        self.statuses = StatusStore(ctx.js, SUBSCRIPTION_STATUS_BUCKET, SubscriptionStatus)

    async def sweep(self, _key: str) -> None:
        await self._collect(self.caches.helm_releases, self.helm_releases)
        await self._collect(self.caches.descriptions, self.descriptions)
        await self._collect(self.caches.bases, self.bases)
        for key in await self.statuses.bucket.keys():
            if self.caches.subscriptions.get(key) is None:
                log.info("deployer.orphan_deleted", bucket=SUBSCRIPTION_STATUS_BUCKET, key=key)
                await self.statuses.delete(key)

    async def _collect(self, informer: Informer[Derived], store: ObjectStore[Derived]) -> None:
        for key, obj in informer.items():
            uids = owner_uid(obj)
            if uids and not any(self.caches.live_uid(uid) for uid in uids):
                log.info("deployer.orphan_deleted", bucket=store.info.bucket, key=key)
                await remove(store, obj)

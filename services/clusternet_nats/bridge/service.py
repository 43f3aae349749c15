"""Wires the bridge: reflectors on the parent, informers on NATS, one queue per direction.

Parent -> NATS: users' kinds (spec + finalizer) and the objects their Subscriptions feed.
NATS -> parent: Subscription status, and Descriptions/ManagedClusters with their status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from clusternet_nats.api import (
    Description,
    Globalization,
    HelmChart,
    KindInfo,
    KubeObject,
    Localization,
    ManagedCluster,
    Manifest,
    Subscription,
    by_kind,
)
from clusternet_nats.api.paths import collection_path
from clusternet_nats.bridge.feeds import FeedPublisher
from clusternet_nats.bridge.mirror import Mirror
from clusternet_nats.bridge.objects import key_of
from clusternet_nats.bridge.specs import SpecPublisher
from clusternet_nats.bridge.status import StatusWriter
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import KubeApi, connect
from clusternet_nats.runtime.service import Builder, ServiceContext
from clusternet_nats.store import BINDINGS_BUCKET, ObjectStore, WorkQueue
from clusternet_nats.store.cancelling import uncancelled
from clusternet_nats.store.views import ObjectViews

PUBLISHED: tuple[type[KubeObject], ...] = (Subscription, Manifest, HelmChart, Localization, Globalization)
"""Kinds users write on the parent, published to NATS."""

MIRRORED: tuple[type[KubeObject], ...] = (Description, ManagedCluster)
"""Kinds controllers write on NATS, mirrored onto the parent."""


def builder(kubeconfig: Path | None) -> Builder:
    async def build(ctx: ServiceContext) -> None:
        api = await connect(kubeconfig)
        Bridge(ctx, api).wire()

    return build


class Bridge:
    def __init__(self, ctx: ServiceContext, api: KubeApi) -> None:
        self.ctx, self.api = ctx, api
        self.views = ObjectViews(ctx.js)
        self.reflectors: list[Reflector] = []
        self.closers: list[Callable[[], Awaitable[None]]] = []

    def reflector(self, info: KindInfo) -> Reflector:
        reflector = Reflector(self.api, collection_path(info), key_of)
        self.reflectors.append(reflector)
        self.ctx.run_forever(reflector.run)
        return reflector

    def wire(self) -> None:
        publishers = {model: self._wire_publisher(by_kind(model.KIND)) for model in PUBLISHED}
        subscriptions = publishers[Subscription].reflector
        for publisher in publishers.values():
            publisher.subscriptions = subscriptions
        self._wire_subscription_status(subscriptions)
        self._wire_feeds(subscriptions)
        for model in MIRRORED:
            self._wire_mirror(by_kind(model.KIND))
        self.ctx.add_readiness_check(lambda: all(r.synced for r in self.reflectors))
        self.ctx.run_forever(self._close_on_stop)

    def _wire_publisher(self, info: KindInfo) -> SpecPublisher:
        parent = self.reflector(info)
        publisher = SpecPublisher(self.api, info, parent, ObjectStore(self.ctx.js, info))
        queue = self.ctx.queue(f"publish-{info.plural}", publisher.reconcile)
        parent.add_handler(queue.add)
        self._follow(info.bucket, queue)  # a deletion NATS held ends there: the parent's may end then
        return publisher

    def _follow(self, bucket: str | None, queue: WorkQueue) -> None:
        """Enqueues the key of every change in a NATS bucket (its values are read elsewhere)."""
        if bucket is not None:
            self.ctx.informer(bucket, lambda _key, data, _revision: data).add_handler(lambda key, _: queue.add(key))

    def _wire_subscription_status(self, subscriptions: Reflector) -> None:
        info = by_kind(Subscription.KIND)
        writer = StatusWriter(self.api, info, subscriptions, self.views)
        queue = self.ctx.queue("subscription-status", writer.reconcile)
        subscriptions.add_handler(queue.add)
        self._follow(info.status_bucket, queue)
        self._follow(BINDINGS_BUCKET, queue)

    def _wire_feeds(self, subscriptions: Reflector) -> None:
        feeds = FeedPublisher(self.api, subscriptions, ObjectStore(self.ctx.js, by_kind(Manifest.KIND)))
        queue = self.ctx.queue("publish-feeds", feeds.reconcile)
        feeds.on_feed = queue.add

        def subscription_changed(key: str) -> None:
            for item in feeds.subscription_changed(key):
                queue.add(item)

        subscriptions.add_handler(subscription_changed)
        self.closers.append(feeds.close)

    def _wire_mirror(self, info: KindInfo) -> None:
        objects = self.ctx.objects(info.model)
        parent = self.reflector(info)
        mirror = Mirror(self.api, info, objects, parent, self.views)
        queue = self.ctx.queue(f"mirror-{info.plural}", mirror.reconcile)
        objects.add_handler(lambda key, _value: queue.add(key))
        parent.add_handler(queue.add)
        self._follow(info.status_bucket, queue)

    async def _close_on_stop(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await uncancelled(self._close())

    async def _close(self) -> None:
        for close in self.closers:
            await close()
        await self.api.close()

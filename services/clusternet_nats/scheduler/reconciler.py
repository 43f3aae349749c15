"""Keeps each Subscription's binding equal to what the scheduler would decide now.

Level-triggered: reconcile(key) reads the Subscription, the ManagedClusters and the Manifests
from informer caches, decides, and writes the binding only if it differs from the stored one
(compare-and-set on the cached revision; a conflict is retried by the work queue). A change to
any cluster re-evaluates every Subscription, and a change to a workload's Manifest those that
divide it, so the work done grows with changes, never with time.

Events tell humans what changed: `Scheduled` when a new binding is written, `FailedScheduling`
(or `UnParseableFeeds`) when a Subscription cannot be placed, once per distinct message. After
a restart a still-failing Subscription is told once more; nothing else is repeated.
"""

from __future__ import annotations

from typing import TypeVar

import structlog
from clusternet_nats.api.apps import FeedInventory, Manifest, SchedulingStrategy, Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.labels import RESERVED_NAMESPACE
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.domain.feeds import Selector, feed_selector
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.scheduler.algorithm import schedule
from clusternet_nats.scheduler.feeds import FeedManifests, ManifestMissingError
from clusternet_nats.scheduler.framework import Framework
from clusternet_nats.store import BINDINGS_BUCKET, StatusStore
from clusternet_nats.store.keys import namespace_filter

SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"
UNPARSEABLE_FEEDS = "UnParseableFeeds"

K = TypeVar("K", bound=KubeObject)
log = structlog.get_logger(__name__)


class SubscriptionScheduler:
    def __init__(self, ctx: ServiceContext, framework: Framework) -> None:
        self.framework = framework
        self.recorder = ctx.recorder
        self.subscriptions = ctx.objects(Subscription)
        self.clusters = ctx.objects(ManagedCluster)
        self.manifests = ctx.objects(Manifest, namespace_filter(RESERVED_NAMESPACE))
        self.store = StatusStore(ctx.js, BINDINGS_BUCKET, SubscriptionBinding)
        self.bindings = ctx.records(BINDINGS_BUCKET, SubscriptionBinding)
        self.feeds = FeedManifests()
        self._warned: dict[str, str] = {}
        self.queue = ctx.queue("scheduler", self.reconcile, on_parked=self._parked)
        self.subscriptions.add_handler(lambda key, _sub: self.queue.add(key))
        self.bindings.add_handler(lambda key, _binding: self.queue.add(key))
        self.clusters.add_handler(self._cluster_changed)
        self.manifests.add_handler(self._manifest_changed)

    # -- what to re-evaluate -----------------------------------------------------------------

    def _cluster_changed(self, _key: str, _cluster: ManagedCluster | None) -> None:
        # While listing, every Subscription is being enqueued by its own informer anyway.
        if self.clusters.synced:
            for key in self.subscriptions.keys():  # noqa: SIM118 - an Informer, not a dict
                self.queue.add(key)

    def _manifest_changed(self, key: str, manifest: Manifest | None) -> None:
        changed = self.feeds.update(key, manifest)
        if self.manifests.synced:
            for sub_key, sub in self.subscriptions.items():
                if self._divides_any(sub, changed):
                    self.queue.add(sub_key)

    @staticmethod
    def _divides_any(sub: Subscription, feeds: set[Selector]) -> bool:
        return sub.spec.scheduling_strategy == SchedulingStrategy.DIVIDING and any(
            feed_selector(feed) in feeds for feed in sub.spec.feeds
        )

    # -- reconciling -------------------------------------------------------------------------

    async def reconcile(self, key: str) -> None:
        sub = self.subscriptions.get(key)
        if sub is None:
            self._warned.pop(key, None)
            if self.bindings.get(key) is not None:
                await self.store.bucket.delete(key, self.bindings.revision(key))
                log.info("binding.deleted", subscription=key)
            return
        try:
            finv = self._inventory(sub)
        except ManifestMissingError as err:
            await self._warn(key, sub, UNPARSEABLE_FEEDS, str(err), written=False)
            return
        decision = await schedule(self.framework, sub, self.clusters.values(), finv, self.bindings.get(key))
        written = await self._write_if_changed(key, decision.binding)
        clusters = decision.binding.binding_clusters
        if decision.failure is not None:
            await self._warn(key, sub, FAILED_SCHEDULING, decision.failure, written)
            return
        self._warned.pop(key, None)
        if written:
            log.info("binding.written", subscription=key, clusters=clusters, scores=decision.scores)
            await self.recorder.normal(
                sub, SCHEDULED, f"Successfully bound {sub.namespace}/{sub.name} to {','.join(clusters)}"
            )

    def _inventory(self, sub: Subscription) -> FeedInventory | None:
        """Interim, until the FeedInventory objects are read: the feeds' replicas from their Manifests."""
        if sub.spec.scheduling_strategy != SchedulingStrategy.DIVIDING:
            return None
        feeds = [{**feed.to_json_dict(), "desiredReplicas": self.feeds.desired_replicas(feed)} for feed in sub.spec.feeds]
        return FeedInventory.new(sub.name, sub.namespace, spec={"feeds": feeds})

    async def _write_if_changed(self, key: str, binding: SubscriptionBinding) -> bool:
        if self.bindings.get(key) == binding:
            return False
        await self.store.put(key, binding, self.bindings.revision(key))
        return True

    async def _warn(self, key: str, sub: Subscription, reason: str, message: str, written: bool) -> None:
        if written or self._warned.get(key) != message:
            log.info("subscription.unschedulable", subscription=key, reason=reason, detail=message)
            self._warned[key] = message
            await self.recorder.warning(sub, reason, message)

    async def _parked(self, key: str, err: BaseException) -> None:
        sub = self.subscriptions.get(key)
        if sub is not None:
            await self.recorder.warning(sub, FAILED_SCHEDULING, f"binding not written after repeated errors: {err}")

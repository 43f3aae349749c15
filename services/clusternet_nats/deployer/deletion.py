"""Deletion that waits: a Subscription's, until its children are clean; a feed's, until no
Subscription uses it (or it has been taken out of them). Clusternet's finalizers and rules are
domain/finalizers.py; the store holds an object with finalizers on DELETE (store/kv.py).
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

import structlog
from clusternet_nats.api.apps import Base, Description, HelmChart, HelmRelease, Manifest, Subscription
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.caches import Caches
from clusternet_nats.deployer.descriptions import GENERIC_SUFFIX, HELM_SUFFIX
from clusternet_nats.deployer.warnings import Warnings
from clusternet_nats.deployer.writes import remove_all
from clusternet_nats.domain.finalizers import (
    APP_FINALIZER,
    FEED_PROTECTION_ANNOTATION,
    FEED_PROTECTION_FINALIZER,
    adding,
    feed_finalizers,
    in_use_message,
    is_deleting,
    subscriptions_using,
    without,
    without_feed,
)
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import Informer, ObjectStore, object_key

log = structlog.get_logger(__name__)
K = TypeVar("K", bound=KubeObject)


class SubscriptionDeletion:
    """A Subscription being deleted (its `apps.clusternet.io/finalizer` holds it), as Clusternet's
    deployer: its Descriptions and HelmReleases go first; a cluster's Base stays until that
    cluster has pruned what the Descriptions put there, which its agent (or, in Push, the hub's
    pusher) tells by deleting their `descriptions-status` keys; the finalizer goes with the last
    Base. A cluster cut off meanwhile keeps its Base (and so the Subscription) until it is back
    and has pruned (the agent prunes what has no Description when it lists again). A cluster
    that is gone (no ManagedCluster) is not waited for."""

    def __init__(self, ctx: ServiceContext, caches: Caches, feed_in_use_protection: bool = False) -> None:
        self.caches = caches
        self.feed_finalizers = feed_finalizers(feed_in_use_protection)
        self.subscriptions: ObjectStore[Subscription] = ObjectStore(ctx.js, KindInfo.of(Subscription))
        self.manifests: ObjectStore[Manifest] = ObjectStore(ctx.js, KindInfo.of(Manifest))
        self.charts: ObjectStore[HelmChart] = ObjectStore(ctx.js, KindInfo.of(HelmChart))
        self.bases: ObjectStore[Base] = ObjectStore(ctx.js, KindInfo.of(Base))
        self.descriptions: ObjectStore[Description] = ObjectStore(ctx.js, KindInfo.of(Description))
        self.helm_releases: ObjectStore[HelmRelease] = ObjectStore(ctx.js, KindInfo.of(HelmRelease))

    async def hold(self, sub: Subscription) -> bool:
        """Puts the finalizer on `sub` before anything is derived from it; True if it wrote (the
        write comes back as a change, and the reconcile goes on then)."""
        return await _adding(self.subscriptions, sub, (APP_FINALIZER,)) is not None

    async def hold_manifest(self, manifest: Manifest) -> Manifest:
        """Puts the feed finalizers on a feed about to be rendered, so that its deletion is seen
        (and, with FeedInUseProtection, held) by the deployer: a feed never rendered needs neither.
        Returns it as held, at the revision written, and the cache has it at once: rendered from
        it, a fleet is not rendered again when the echo of the finalizers comes (each feed's
        revision is an input of every cluster's rendering)."""
        return await self._held(self.manifests, self.caches.manifests, manifest)

    async def hold_chart(self, chart: HelmChart) -> HelmChart:
        """`hold_manifest` for a HelmChart feed."""
        return await self._held(self.charts, self.caches.charts, chart)

    async def _held(self, store: ObjectStore[K], cache: Informer[K], feed: K) -> K:
        held = await _adding(store, feed, self.feed_finalizers)
        if held is None:
            return feed
        cache.learn(store.key_of(held), held, int(held.metadata.resource_version or 0))
        return held

    async def finalize(self, sub: Subscription) -> None:
        uid = sub.metadata.uid or ""
        await remove_all(self.descriptions, self.caches.descriptions_of(uid))
        await remove_all(self.helm_releases, self.caches.helm_releases_of(uid))
        pending = []
        done = []
        joined = {cluster.namespace for cluster in self.caches.clusters.values()}
        for base in self.caches.bases_of(uid):
            if base.namespace in joined and self._cluster_holds(base):
                pending.append(base.namespace)
            else:
                log.info("deployer.base_deleted", cluster=base.namespace, base=base.name)
                done.append(base)
        await remove_all(self.bases, done)
        if pending or self.caches.descriptions_of(uid) or self.caches.bases_of(uid):
            log.info("deployer.deletion_pending", clusters=pending)
            return  # a change to what is left (a status deleted, a Base gone) reconciles again
        if APP_FINALIZER in (sub.metadata.finalizers or []):
            await self.subscriptions.update(without(sub, APP_FINALIZER), sub)
            log.info("deployer.subscription_finalized")

    def _cluster_holds(self, base: Base) -> bool:
        """Whether the (joined) cluster of `base` may still hold objects of its Descriptions."""
        keys = (object_key(base.namespace, base.name + suffix) for suffix in (GENERIC_SUFFIX, HELM_SUFFIX))
        return any(self.caches.description_statuses.get(key) is not None for key in keys)


async def _adding(store: ObjectStore[K], obj: K, finalizers: tuple[str, ...]) -> K | None:
    """`obj` with the finalizers added, as written; None if it had them all."""
    marked = adding(obj, *finalizers)
    if marked is None:
        return None
    return await store.update(marked, obj)


FeedObject = Manifest | HelmChart


class FeedDeletion:
    """A feed (Manifest, HelmChart) being deleted, as Clusternet's deployer handles one
    (protectManifestFeed/protectHelmChartFeed): with `apps.clusternet.io/feed-protection` and
    Subscriptions still naming it, its deletion is held and the annotation of that name says
    by which (with a Warning Event); otherwise it is removed from those Subscriptions' feeds (so
    the children prune its objects), and then its finalizers go, and so does it.

    Its own queue, keyed `<kind>|<key>`: a change to the feed, or to any Subscription while a feed
    is being deleted (one no longer naming it may free it), queues it again."""

    def __init__(self, ctx: ServiceContext, caches: Caches) -> None:
        self.caches = caches
        self.warnings = Warnings(ctx.recorder)
        self.subscriptions: ObjectStore[Subscription] = ObjectStore(ctx.js, KindInfo.of(Subscription))
        self.stores: dict[str, ObjectStore[Any]] = {
            Manifest.KIND: ObjectStore(ctx.js, KindInfo.of(Manifest)),
            HelmChart.KIND: ObjectStore(ctx.js, KindInfo.of(HelmChart)),
        }
        self.informers: dict[str, Informer[Any]] = {Manifest.KIND: caches.manifests, HelmChart.KIND: caches.charts}
        self._deleting: set[str] = set()
        self.queue = ctx.queue("deployer-feed-deletions", self.reconcile)
        for kind, informer in self.informers.items():
            informer.add_handler(functools.partial(self._feed_changed, kind))
        caches.subscriptions.add_handler(lambda _key, _sub: self._requeue())

    def _feed_changed(self, kind: str, key: str, feed: FeedObject | None) -> None:
        item = f"{kind}|{key}"
        if feed is not None and is_deleting(feed):
            self._deleting.add(item)
            self.queue.add(item)
        else:
            self._deleting.discard(item)

    def _requeue(self) -> None:
        for item in self._deleting:
            self.queue.add(item)

    async def reconcile(self, item: str) -> None:
        kind, _, key = item.partition("|")
        feed: FeedObject | None = self.informers[kind].get(key)
        if feed is None or not is_deleting(feed):
            return
        ours = (APP_FINALIZER, FEED_PROTECTION_FINALIZER)
        if not any(f in ours for f in feed.metadata.finalizers or []):
            return
        users = subscriptions_using(feed, self.caches.subscriptions.values())
        if users and FEED_PROTECTION_FINALIZER in (feed.metadata.finalizers or []):
            await self._block(feed, in_use_message(feed, users))
            return
        for sub in users:
            log.info("deployer.feed_removed", feed=item, subscription=sub.namespaced_name())
            await self.subscriptions.update(without_feed(sub, feed), sub)
        if users:
            return  # their changes queue this again, once the cache has them
        self.warnings.resolve(feed, "feed-protection")
        await self.stores[kind].update(without(feed, *ours), feed)
        log.info("deployer.feed_finalized", feed=item)

    async def _block(self, feed: FeedObject, message: str) -> None:
        annotations = feed.metadata.annotations or {}
        if annotations.get(FEED_PROTECTION_ANNOTATION) != message:
            annotated = feed.model_copy(deep=True)
            annotated.metadata.annotations = {**annotations, FEED_PROTECTION_ANNOTATION: message}
            await self.stores[feed.kind].update(annotated, feed)
        log.warning("deployer.feed_in_use", feed=feed.namespaced_name(), message=message)
        await self.warnings.warn(feed, "feed-protection", "FeedInUse", message)

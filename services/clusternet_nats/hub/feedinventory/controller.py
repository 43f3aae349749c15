"""Clusternet's FeedInventory controller (pkg/controllers/apps/feedinventory), level-triggered.

One FeedInventory per Subscription, same namespace and name, owned by it (ownerReference, the
`apps.clusternet.io/subs.*` labels): per feed in the Subscription's order, its desired replicas,
replicaJsonPath and one replica's requirements (domain/replicas.py). The scheduler divides by
it and the predictor counts by it. Reconciled whenever the Subscription, a Manifest one of its
feeds names (domain/feeds.py) or the FeedInventory itself changes; a FeedInventory whose
Subscription is gone is deleted (the garbage collection the ownerReference asks for).

Clusternet writes one for Dividing Subscriptions only; we also write one for any Subscription
whose feeds carry replicas, so `cnet get finv` shows every workload's requirements. A feed whose
Manifest is missing, or whose workload cannot be read, leaves the FeedInventory as it was and
says why in a Warning Event on the Subscription (Clusternet's UnParseableFeeds); the Manifest's
arrival or fix re-reconciles it.
"""

from __future__ import annotations

import structlog
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import (
    FeedInventory,
    FeedInventorySpec,
    FeedOrder,
    Manifest,
    SchedulingStrategy,
    Subscription,
)
from clusternet_nats.api.meta import Feed, ObjectMeta, OwnerReference
from clusternet_nats.domain.feeds import Selector, feed_selector, format_feed, is_chart_feed, manifest_selectors
from clusternet_nats.domain.replicas import IN_TREE_KINDS, ReplicaError, ReplicaKinds, carries_replicas, feed_order
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store.index import Index

CREATOR = "clusternet-hub"

log = structlog.get_logger(__name__)


def _selectors(sub: Subscription) -> set[Selector]:
    return {feed_selector(feed) for feed in sub.spec.feeds if not is_chart_feed(feed)}


def inventory_meta(sub: Subscription) -> ObjectMeta:
    """The FeedInventory's metadata as Clusternet writes it: the Subscription's namespace and
    name, labels naming it, and a controller ownerReference to it."""
    owner = OwnerReference.controller_of(sub)
    labels = {
        known.CREATED_BY: CREATOR,
        known.SUBS_NAME: sub.name,
        known.SUBS_NAMESPACE: sub.namespace or "",
        known.SUBS_UID: sub.metadata.uid or "",
    }
    return ObjectMeta(name=sub.name, namespace=sub.namespace, labels=labels, owner_references=[owner])


class UnparseableFeedsError(LookupError):
    """A feed's Manifest is missing or its workload cannot be read."""


class FeedInventoryController:
    def __init__(self, ctx: ServiceContext, kinds: ReplicaKinds = IN_TREE_KINDS) -> None:
        self.kinds = kinds
        self.recorder = ctx.recorder
        self.subscriptions = ctx.objects(Subscription)
        self.manifests = ctx.objects(Manifest)
        self.inventories = ctx.objects(FeedInventory)
        self.store = ctx.object_store(FeedInventory)
        self._manifests_by_feed: Index[Manifest, Selector] = Index(manifest_selectors)
        self._subscriptions_by_feed: Index[Subscription, Selector] = Index(_selectors)
        self.queue = ctx.queue("feed-inventory", self.reconcile)
        self.subscriptions.add_handler(self._subscription_changed)
        self.manifests.add_handler(self._manifest_changed)
        self.inventories.add_handler(lambda key, _finv: self.queue.add(key))

    def _subscription_changed(self, key: str, sub: Subscription | None) -> None:
        self._subscriptions_by_feed.update(key, sub)
        self.queue.add(key)

    def _manifest_changed(self, key: str, manifest: Manifest | None) -> None:
        for selector in self._manifests_by_feed.update(key, manifest):
            for sub_key in self._subscriptions_by_feed.keys_for(selector):
                self.queue.add(sub_key)

    def _order(self, feed: Feed) -> FeedOrder:
        if is_chart_feed(feed):
            return FeedOrder.model_validate(feed.to_json_dict())
        keys = self._manifests_by_feed.keys_for(feed_selector(feed))
        manifest = self.manifests.get(keys[0]) if keys else None
        if manifest is None:
            missing = f"{format_feed(feed)} not found: no Manifest in {known.RESERVED_NAMESPACE} holds it"
            raise UnparseableFeedsError(missing)
        try:
            return feed_order(feed, manifest.template, self.kinds)
        except ReplicaError as err:
            raise UnparseableFeedsError(str(err)) from err

    def wanted(self, sub: Subscription) -> FeedInventory | None:
        """The FeedInventory the Subscription should have (None: it needs none). Raises
        UnparseableFeedsError naming every feed that cannot be read."""
        orders: list[FeedOrder] = []
        errors: list[str] = []
        for feed in sub.spec.feeds:
            try:
                orders.append(self._order(feed))
            except UnparseableFeedsError as err:
                errors.append(str(err))
        if errors:
            raise UnparseableFeedsError("; ".join(errors))
        if sub.spec.scheduling_strategy != SchedulingStrategy.DIVIDING and not carries_replicas(orders):
            return None
        return FeedInventory(
            api_version=FeedInventory.api_version_string(),
            kind=FeedInventory.KIND,
            metadata=inventory_meta(sub),
            spec=FeedInventorySpec(feeds=orders),
        )

    async def reconcile(self, key: str) -> None:
        sub = self.subscriptions.get(key)
        current = self.inventories.get(key)
        if sub is not None and sub.metadata.deletion_timestamp is not None:
            return
        try:
            wanted = self.wanted(sub) if sub is not None else None
        except UnparseableFeedsError as err:
            assert sub is not None
            log.info("feedinventory.unparseable", subscription=key, error=str(err))
            await self.recorder.warning(sub, "UnParseableFeeds", str(err))
            return
        if wanted is None:
            if current is not None:
                await self.store.delete(current.namespace, current.name, current.metadata.resource_version)
                log.info("feedinventory.deleted", subscription=key)
            return
        if current is not None and (current.spec, current.metadata.labels, current.metadata.owner_references) == (
            wanted.spec,
            wanted.metadata.labels,
            wanted.metadata.owner_references,
        ):
            return
        if current is None:
            await self.store.create(wanted)
        else:
            wanted.metadata.resource_version = current.metadata.resource_version
            await self.store.update(wanted, current)
        log.info("feedinventory.synced", subscription=key, feeds=len(wanted.spec.feeds))
        assert sub is not None
        await self.recorder.normal(sub, "FeedInventorySynced", "FeedInventory synced successfully")

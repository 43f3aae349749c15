"""What the deployer watches, and which Subscriptions each change concerns.

One informer per bucket it reads, plus reverse indexes kept by the informers' handlers: feed
selector -> Subscriptions, bound cluster -> Subscriptions, Subscription uid -> its Bases,
Descriptions and HelmReleases (found by their labels, so nothing depends on having seen them created). Every
change becomes the keys of the Subscriptions it concerns, and a change to a Base or Description
whose Subscription no longer exists asks for an orphan sweep instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import (
    Base,
    Description,
    DescriptionStatus,
    Globalization,
    HelmChart,
    HelmRelease,
    HelmReleaseStatus,
    Localization,
    Manifest,
    OverridePolicy,
    Subscription,
)
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Feed, KubeObject
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.descriptions import GENERIC_SUFFIX, HELM_SUFFIX
from clusternet_nats.domain.feeds import Selector, chart_feed, feed_selector, manifest_selectors
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import BINDINGS_BUCKET, Informer, object_key, split_key
from clusternet_nats.store.index import Index
from clusternet_nats.store.keys import namespace_filter

K = TypeVar("K", bound=KubeObject)


def owner_uid(obj: Base | Description | HelmRelease) -> set[str]:
    """The uid of the Subscription a Base, Description or HelmRelease was derived from, if the
    deployer made it."""
    labels = obj.metadata.labels or {}
    uid = labels.get(known.SUBS_UID)
    return {uid} if uid and labels.get(known.CREATED_BY) == known.DEPLOYER else set()


def _applied_now(obj: Localization | Globalization) -> set[Selector]:
    # Clusternet re-renders on an override change only for ApplyNow; ApplyLater waits for the
    # next rendering of the feed, whatever triggers it.
    feed = obj.spec.feed
    if feed is None or obj.spec.override_policy != OverridePolicy.APPLY_NOW:
        return set()
    return {feed_selector(feed)}


def _uid(sub: Subscription) -> set[str]:
    return {sub.metadata.uid} if sub.metadata.uid else set()


@dataclass
class OwnWrites:
    """What a converge wrote (key -> revision) and what the informers heard meanwhile."""

    written: dict[str, str | None] = field(default_factory=dict)
    heard: dict[str, str | None] = field(default_factory=dict)

    def foreign(self) -> bool:
        """Whether something heard was not one of the writes (its revision not the one written)."""
        return any(key not in self.written or self.written[key] != revision for key, revision in self.heard.items())


class Caches:
    def __init__(self, ctx: ServiceContext) -> None:
        self.subscriptions = ctx.objects(Subscription)
        self.bindings = ctx.records(BINDINGS_BUCKET, SubscriptionBinding)
        self.manifests = ctx.objects(Manifest, namespace_filter(known.RESERVED_NAMESPACE))
        self.charts = ctx.objects(HelmChart)
        self.localizations = ctx.objects(Localization)
        self.globalizations = ctx.objects(Globalization)
        self.clusters = ctx.objects(ManagedCluster)
        self.bases = ctx.objects(Base)
        self.descriptions = ctx.objects(Description)
        self.description_statuses = ctx.records(KindInfo.of(Description).status_bucket or "", DescriptionStatus)
        self.helm_releases = ctx.objects(HelmRelease)
        self.helm_release_statuses = ctx.records(KindInfo.of(HelmRelease).status_bucket or "", HelmReleaseStatus)
        self._writing: dict[str, OwnWrites] = {}
        """By Subscription key: the converge writing its Bases or Descriptions now (`own_writes`)."""
        self._enqueue: Callable[[str], None] = lambda _key: None

        self.subs_by_feed: Index[Subscription, Selector] = Index(
            lambda sub: {feed_selector(feed) for feed in sub.spec.feeds}
        )
        self.subs_by_uid: Index[Subscription, str] = Index(_uid)
        self.subs_by_cluster: Index[SubscriptionBinding, str] = Index(lambda binding: binding.binding_clusters)
        self.manifests_by_feed: Index[Manifest, Selector] = Index(manifest_selectors)
        self.localizations_by_feed: Index[Localization, Selector] = Index(_applied_now)
        self.globalizations_by_feed: Index[Globalization, Selector] = Index(_applied_now)
        self.bases_by_sub: Index[Base, str] = Index(owner_uid)
        self.descriptions_by_sub: Index[Description, str] = Index(owner_uid)
        self.helm_releases_by_sub: Index[HelmRelease, str] = Index(owner_uid)

    # -- lookups for the reconciler --------------------------------------------------------

    def manifests_for(self, feed: Feed) -> list[Manifest]:
        found = (self.manifests.get(key) for key in self.manifests_by_feed.keys_for(feed_selector(feed)))
        return [manifest for manifest in found if manifest is not None]

    def chart_for(self, feed: Feed) -> HelmChart | None:
        selector = feed_selector(feed)
        return self.charts.get(object_key(selector.namespace, selector.name))

    def cluster(self, namespaced_name: str) -> ManagedCluster | None:
        namespace, _, name = namespaced_name.partition("/")
        return self.clusters.get(object_key(namespace, name)) if namespace and name else None

    def bases_of(self, uid: str) -> list[Base]:
        return self._owned(self.bases, self.bases_by_sub, uid)

    def descriptions_of(self, uid: str) -> list[Description]:
        return self._owned(self.descriptions, self.descriptions_by_sub, uid)

    def helm_releases_of(self, uid: str) -> list[HelmRelease]:
        return self._owned(self.helm_releases, self.helm_releases_by_sub, uid)

    @staticmethod
    def _owned(informer: Informer[K], index: Index[K, str], uid: str) -> list[K]:
        found = (informer.get(key) for key in index.keys_for(uid))
        return [obj for obj in found if obj is not None]

    def live_uid(self, uid: str) -> bool:
        return self.subs_by_uid.has(uid)

    # -- change -> Subscription keys -------------------------------------------------------

    @contextlib.contextmanager
    def own_writes(self, sub_key: str) -> Iterator[OwnWrites]:
        """While a converge writes a kind's objects: a change the informers hear of them is noted,
        not queued, and when the writes are done the Subscription is queued again only if one of
        those changes was not its own write (another writer's, or a deletion). At 10,000
        clusters the pass its own echoes queued found nothing to do and cost seconds."""
        writes = self._writing[sub_key] = OwnWrites()
        try:
            yield writes
        finally:
            del self._writing[sub_key]
            if writes.foreign():
                self._enqueue(sub_key)

    def watch(
        self,
        enqueue: Callable[[str], None],
        sweep: Callable[[], None],
        status_changed: Callable[[str, str], None],
    ) -> None:
        """Wires every informer to `enqueue` (a Subscription key to converge), `sweep` (orphans
        to collect) or, for a Description's status, `status_changed` (the Subscription's key, the
        Description's)."""

        def for_feeds(selectors: set[Selector]) -> None:
            for selector in selectors:
                for key in self.subs_by_feed.keys_for(selector):
                    enqueue(key)

        self._enqueue = enqueue

        def for_owners(uids: set[str] | frozenset[str], tell: Callable[[str], None] = enqueue) -> None:
            for uid in uids:
                owners = self.subs_by_uid.keys_for(uid)
                for key in owners:
                    tell(key)
                if not owners:
                    sweep()

        def on_description_status(key: str, status: DescriptionStatus | None) -> None:
            uids = self._status_owners(key)
            if status is None:  # the child pruned: a deletion held on its children may go on
                for_owners(uids)
            for_owners(uids, lambda sub_key: status_changed(sub_key, key))

        def on_subscription(key: str, sub: Subscription | None) -> None:
            self.subs_by_feed.update(key, sub)
            self.subs_by_uid.update(key, sub)
            enqueue(key)
            if sub is None:
                sweep()

        def on_binding(key: str, binding: SubscriptionBinding | None) -> None:
            self.subs_by_cluster.update(key, binding)
            enqueue(key)

        def on_cluster(key: str, _cluster: ManagedCluster | None) -> None:
            namespace, name = split_key(key, namespaced=True)
            for sub_key in self.subs_by_cluster.keys_for(f"{namespace}/{name}"):
                enqueue(sub_key)

        def on_chart(key: str, _chart: HelmChart | None) -> None:
            for_feeds({feed_selector(chart_feed(*split_key(key, namespaced=True)))})

        self.subscriptions.add_handler(on_subscription)
        self.bindings.add_handler(on_binding)
        self.clusters.add_handler(on_cluster)
        self.charts.add_handler(on_chart)
        self.manifests.add_handler(lambda key, obj: for_feeds(self.manifests_by_feed.update(key, obj)))
        self.localizations.add_handler(lambda key, obj: for_feeds(self.localizations_by_feed.update(key, obj)))
        self.globalizations.add_handler(lambda key, obj: for_feeds(self.globalizations_by_feed.update(key, obj)))
        def on_derived(key: str, obj: Base | Description | None, uids: frozenset[str] | set[str]) -> None:
            def converge_unless_writing(sub_key: str) -> None:
                writing = self._writing.get(sub_key)
                if writing is None:
                    enqueue(sub_key)
                else:
                    writing.heard[key] = obj.metadata.resource_version if obj is not None else None

            for_owners(uids, converge_unless_writing)

        self.bases.add_handler(lambda key, obj: on_derived(key, obj, self.bases_by_sub.update(key, obj)))
        self.descriptions.add_handler(lambda key, obj: on_derived(key, obj, self.descriptions_by_sub.update(key, obj)))
        self.helm_releases.add_handler(lambda key, obj: for_owners(self.helm_releases_by_sub.update(key, obj)))
        self.description_statuses.add_handler(on_description_status)

    def _status_owners(self, key: str) -> frozenset[str]:
        """Whose Description a status is about; once the Description is gone (a child pruned it
        and deleted its status), the owner of the Base it was made from."""
        owners = self.descriptions_by_sub.values_of(key)
        base = next((key.removesuffix(s) for s in (GENERIC_SUFFIX, HELM_SUFFIX) if key.endswith(s)), None)
        return owners or (self.bases_by_sub.values_of(base) if base else frozenset())

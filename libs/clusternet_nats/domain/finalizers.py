"""Finalizers: kube-apiserver's rules for them, and Clusternet's use of them.

Kubernetes: an object whose `metadata.finalizers` is not empty is not removed by a DELETE; the
server sets `deletionTimestamp` and keeps it, and removes it when an update drops the last
finalizer. Once being deleted, an object takes no new finalizer and keeps its deletionTimestamp.
The store (store/kv.py) applies these rules to every write, whoever makes it.

Clusternet (pkg/known, pkg/controllermanager/deployer):
* `apps.clusternet.io/finalizer` on a Subscription, held until its Bases (and so every child's
  objects) are gone; on a feed (Manifest, HelmChart) in use, held until the deployer has removed
  the feed from the Subscriptions that refer to it.
* `apps.clusternet.io/feed-protection` on a feed, with the FeedInUseProtection feature gate on:
  the feed's deletion is held, with the Subscriptions named in the annotation of the same name,
  until no Subscription refers to it any more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import HelmChart, Manifest, Subscription
from clusternet_nats.api.meta import KubeObject, ObjectMeta
from clusternet_nats.domain.feeds import Selector, chart_feed, feed_selector, manifest_selectors

APP_FINALIZER = "apps.clusternet.io/finalizer"
FEED_PROTECTION_FINALIZER = "apps.clusternet.io/feed-protection"
FEED_PROTECTION_ANNOTATION = "apps.clusternet.io/feed-protection"
K = TypeVar("K", bound=KubeObject)

FEED_IN_USE_PROTECTION = "FeedInUseProtection"
"""Clusternet's feature gate (alpha, off by default), set where the deployer runs as since v0.15.0."""


# -- Kubernetes ---------------------------------------------------------------------------


def is_deleting(obj: KubeObject) -> bool:
    return obj.metadata.deletion_timestamp is not None


def held(meta: ObjectMeta) -> bool:
    """Whether a DELETE only marks the object (deletionTimestamp) instead of removing it."""
    return bool(meta.finalizers)


def added_while_deleting(current: ObjectMeta, new: ObjectMeta) -> str | None:
    """kube-apiserver's refusal of a finalizer added to an object being deleted, or None."""
    if current.deletion_timestamp is None:
        return None
    added = [f for f in new.finalizers or [] if f not in (current.finalizers or [])]
    if not added:
        return None
    return f"no new finalizers can be added if the object is being deleted, found new finalizers {added}"


def with_finalizers(obj: K, finalizers: Iterable[str]) -> K:
    """A copy of `obj` whose finalizers are `finalizers` (in order, once each; None when empty)."""
    wanted = list(dict.fromkeys(finalizers))
    return obj.model_copy(update={"metadata": obj.metadata.model_copy(update={"finalizers": wanted or None})})


def without(obj: K, *finalizers: str) -> K:
    return with_finalizers(obj, (f for f in obj.metadata.finalizers or [] if f not in finalizers))


def adding(obj: K, *finalizers: str) -> K | None:
    """`obj` with `finalizers` added, or None when it has them all already (or is being deleted)."""
    have = obj.metadata.finalizers or []
    if is_deleting(obj) or all(f in have for f in finalizers):
        return None
    return with_finalizers(obj, [*have, *finalizers])


# -- Clusternet ---------------------------------------------------------------------------


def feed_finalizers(protection: bool) -> tuple[str, ...]:
    """What the deployer puts on a feed it renders."""
    return (APP_FINALIZER, FEED_PROTECTION_FINALIZER) if protection else (APP_FINALIZER,)


def feed_selectors(feed: Manifest | HelmChart) -> frozenset[Selector]:
    """The feed selectors naming this Manifest or HelmChart."""
    if isinstance(feed, HelmChart):
        return frozenset((feed_selector(chart_feed(feed.namespace, feed.name)),))
    return manifest_selectors(feed)


def subscriptions_using(feed: Manifest | HelmChart, subscriptions: Iterable[Subscription]) -> list[Subscription]:
    """The Subscriptions, not themselves being deleted, whose feeds name `feed` (Clusternet's
    findAllMatchingSubscriptions' strict check), in namespace/name order."""
    selectors = feed_selectors(feed)
    using = [
        sub
        for sub in subscriptions
        if not is_deleting(sub) and any(feed_selector(f) in selectors for f in sub.spec.feeds)
    ]
    return sorted(using, key=lambda sub: (sub.namespace, sub.name))


def without_feed(sub: Subscription, feed: Manifest | HelmChart) -> Subscription:
    """`sub` with every feed naming `feed` removed (Clusternet's RemoveFeedFromSubscription)."""
    selectors = feed_selectors(feed)
    feeds = [f for f in sub.spec.feeds if feed_selector(f) not in selectors]
    return sub.model_copy(update={"spec": sub.spec.model_copy(update={"feeds": feeds})})


def in_use_message(feed: Manifest | HelmChart, subscriptions: Sequence[Subscription]) -> str:
    """Clusternet's words for a deletion held by feed protection, naming the Subscriptions."""
    what = HelmChart.KIND if isinstance(feed, HelmChart) else (feed.metadata.labels or {}).get(known.CONFIG_KIND, "")
    names = ", ".join(f"{sub.namespace}/{sub.name}" for sub in subscriptions)
    return (
        f"block deleting current {what} until all Subscriptions (including {names}) "
        "that refer this as a feed get deleted"
    )

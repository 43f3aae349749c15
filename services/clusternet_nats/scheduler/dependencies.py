"""Which Subscriptions a change concerns, so scheduling work grows with changes, not fleet size.

A Subscription depends on the clusters its subscribers' clusterAffinity selects (a join, a leave,
a label or taint change among them may change its placement), on the clusters it is bound to
(their loss is a failover), and, while some of its replicas found no room, on the free capacity
of the clusters it selects. Clusternet walks every Subscription's subscribers on each cluster
event; here the selectors are indexed by the label pairs they require (`matchLabels`, and `In`
expressions), so a cluster event looks up only the Subscriptions that could select it, then
checks those. Selectors that require no label value (empty, `Exists`, `NotIn` only) are few and
checked on every event. The same index, turned round (clusters by label pair), gives the
clusters a Subscription could select at all, so a decision need not filter the whole fleet.

A cluster event counts only when what scheduling reads of the cluster changed (labels, taints,
deletion), as Clusternet's handler skips updates that leave labels and taints alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import LabelSelector, SelectorOperator, Taint
from clusternet_nats.store.index import Index

Pair = tuple[str, str]


@dataclass(frozen=True)
class ClusterFacts:
    """What scheduling reads of a ManagedCluster; a change elsewhere re-evaluates nothing."""

    labels: tuple[Pair, ...]
    taints: tuple[Taint, ...]
    deleting: bool

    @classmethod
    def of(cls, cluster: ManagedCluster) -> ClusterFacts:
        return cls(
            labels=tuple(sorted((cluster.metadata.labels or {}).items())),
            taints=tuple(cluster.spec.taints or ()),
            deleting=cluster.metadata.deletion_timestamp is not None,
        )


def required_pairs(selector: LabelSelector) -> set[Pair] | None:
    """Label pairs one of which any cluster the selector matches must carry; None: no such set."""
    if selector.match_labels:
        return {min(selector.match_labels.items())}
    for req in selector.match_expressions or []:
        if req.operator is SelectorOperator.IN:
            return {(req.key, value) for value in req.values or []}
    return None


def _selectors(sub: Subscription) -> list[LabelSelector]:
    return [subscriber.cluster_affinity for subscriber in sub.spec.subscribers]


def _indexed_pairs(sub: Subscription) -> set[Pair]:
    return {pair for selector in _selectors(sub) for pair in required_pairs(selector) or ()}


class Dependencies:
    def __init__(self) -> None:
        self._selectors: dict[str, list[LabelSelector]] = {}
        self._subs_by_pair: Index[Subscription, Pair] = Index(_indexed_pairs)
        self._unindexed: set[str] = set()
        self._bound: Index[SubscriptionBinding, str] = Index(
            lambda binding: [*binding.binding_clusters, *binding.draining_clusters]
        )
        self._waiting_for_room: set[str] = set()
        self._clusters: dict[str, ClusterFacts] = {}
        self._clusters_by_pair: Index[ClusterFacts, Pair] = Index(lambda facts: facts.labels)

    # -- what each Subscription depends on -------------------------------------------------

    def subscription_changed(self, key: str, sub: Subscription | None) -> None:
        self._subs_by_pair.update(key, sub)
        self._unindexed.discard(key)
        self._selectors.pop(key, None)
        if sub is None:
            return
        self._selectors[key] = _selectors(sub)
        if any(required_pairs(selector) is None for selector in self._selectors[key]):
            self._unindexed.add(key)

    def binding_changed(self, key: str, binding: SubscriptionBinding | None) -> None:
        self._bound.update(key, binding)
        if binding is not None and binding.unscheduled_replicas:
            self._waiting_for_room.add(key)
        else:
            self._waiting_for_room.discard(key)

    # -- what a change concerns ------------------------------------------------------------

    def cluster_changed(self, key: str, cluster: ManagedCluster | None, concerned: bool = True) -> set[str]:
        """The Subscriptions to re-evaluate; none when nothing scheduling reads has changed, or
        when not `concerned` (while listing, when every Subscription is evaluated anyway)."""
        old = self._clusters.pop(key, None)
        new = ClusterFacts.of(cluster) if cluster is not None else None
        if new is not None:
            self._clusters[key] = new
        if old == new:
            return set()
        self._clusters_by_pair.update(key, new)
        if not concerned:
            return set()
        affected = set(self._bound.keys_for(key))
        for facts in (old, new):
            if facts is not None:
                affected |= self.selecting(dict(facts.labels))
        return affected

    def candidates(self, sub: str) -> set[str] | None:
        """The clusters some subscriber of `sub` could select (a superset of those it selects);
        None when one of its selectors requires no label value, so any cluster could match."""
        if sub in self._unindexed or sub not in self._selectors:
            return None
        return {key for pair in self._subs_by_pair.values_of(sub) for key in self._clusters_by_pair.keys_for(pair)}

    def capacity_changed(self, key: str) -> set[str]:
        """The Subscriptions with replicas that found no room and that select this cluster."""
        facts = self._clusters.get(key)
        if facts is None:
            return set()
        labels = dict(facts.labels)
        return {sub for sub in self._waiting_for_room if self._selects(sub, labels)}

    def selecting(self, labels: dict[str, str]) -> set[str]:
        """Subscriptions some subscriber of which selects a cluster with these labels."""
        candidates = set(self._unindexed)
        for pair in labels.items():
            candidates.update(self._subs_by_pair.keys_for(pair))
        return {sub for sub in candidates if self._selects(sub, labels)}

    def bound_to(self, cluster: str) -> list[str]:
        return self._bound.keys_for(cluster)

    def _selects(self, sub: str, labels: dict[str, str]) -> bool:
        return any(selector.matches(labels) for selector in self._selectors.get(sub, ()))

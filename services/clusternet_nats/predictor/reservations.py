"""Replicas bound to a cluster but not running there yet: room the predictor must not offer twice.

The scheduler writes a binding (per feed, the replicas given to each cluster) long before the
agent's pods land and the node inventory counts them. Until then those replicas are reserved:
assigned minus what the cluster reports ready for that feed (the Description status's observed
`readyReplicas`, `availableReplicas` where not given; a Job's pods active or finished). A pod placed but not ready yet is counted
both in the node's requested and here, for a moment: the predictor errs towards less room.

Kept per Subscription and indexed per cluster with a generation counter, so a change to one
binding or one Description status touches only its clusters, and the predictor's cache of a
cluster's room stays valid while that cluster's reservations and inventory do not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from clusternet_nats.api.apps import FeedInventory, FeedOrder
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.predictor.fit import Demand, RequirementError


@dataclass(frozen=True)
class Pending:
    subscription: str
    """`ns/name` of the Subscription."""
    feed: str
    """The feed's key in the binding."""
    cluster: str
    replicas: int
    demand: Demand | None
    """None when the feed's requirements cannot be read: nothing to place, still listed."""


Running = Callable[[str, FeedOrder], int]
"""Ready replicas of a feed in a cluster (`ns/name`), as the cluster reports them."""


def pending_replicas(
    subscription: str, binding: SubscriptionBinding | None, finv: FeedInventory | None, running: Running
) -> list[Pending]:
    """Per bound cluster and feed with replicas, those assigned and not ready yet."""
    if binding is None or finv is None:
        return []
    out = []
    for order in finv.spec.feeds:
        if order.desired_replicas is None:
            continue
        key = feed_key(order)
        shares = binding.replicas.get(key, [])
        try:
            demand = Demand.of(order.replica_requirements) if order.replica_requirements else Demand()
        except RequirementError:
            demand = None
        for cluster, assigned in zip(binding.binding_clusters, shares, strict=False):
            missing = assigned - running(cluster, order) if assigned else 0
            if missing > 0:
                out.append(Pending(subscription, key, cluster, missing, demand))
    return out


class Reservations:
    def __init__(self) -> None:
        self._by_cluster: dict[str, dict[tuple[str, str], Pending]] = {}
        self._clusters_of: dict[str, set[str]] = {}
        self._generation: dict[str, int] = {}

    def replace(self, subscription: str, pending: list[Pending]) -> None:
        """Sets what `subscription` reserves; bumps the generation of every cluster it touched."""
        touched = self._clusters_of.pop(subscription, set())
        for cluster in touched:
            entries = self._by_cluster.get(cluster, {})
            for key in [k for k in entries if k[0] == subscription]:
                del entries[key]
            if not entries:
                self._by_cluster.pop(cluster, None)
        now = {p.cluster for p in pending}
        for p in pending:
            self._by_cluster.setdefault(p.cluster, {})[(subscription, p.feed)] = p
        if now:
            self._clusters_of[subscription] = now
        for cluster in touched | now:
            self._generation[cluster] = self._generation.get(cluster, 0) + 1

    def generation(self, cluster: str) -> int:
        return self._generation.get(cluster, 0)

    def of(self, cluster: str) -> list[Pending]:
        """The cluster's reservations, by Subscription key (a stable placing order)."""
        return sorted(self._by_cluster.get(cluster, {}).values(), key=lambda p: (p.subscription, p.feed))

    def __iter__(self) -> Iterator[Pending]:
        for cluster in sorted(self._by_cluster):
            yield from self.of(cluster)

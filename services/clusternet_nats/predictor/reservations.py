"""Replicas bound to a cluster but not counted by its node inventory yet: room the predictor must
not offer twice.

The scheduler writes a binding (per feed, the replicas given to each cluster) long before the
agent's pods land, and the pods that land are in the node inventory's `requested` only from the
agent's next collection. Reserving `assigned - ready` (ready as the Description status reports
it) left a window: the status says ready before the inventory counts the pods, and in between
those replicas were counted nowhere, so a re-evaluation offered their room again (issue 9).

So a reservation holds until the very inventory the predictor subtracts from counts the replicas:
the agent reports, per node, how many of the pods in `requested` each Description owns
(`podsByDescription`, computed from the same listing as `requested`), and a feed reserves
`assigned - landed`, where landed is what that inventory counts for the Description (plus, for a
Job, pods already finished, which hold no room and are never in `requested`). Ready status plays
no part: it can run ahead of the inventory, never behind it in a way that matters, since a pod
not yet counted is still reserved. An inventory that does not count per Description (an agent
that does not, or a backend that cannot label pods by owner) falls back to the ready status.

A Description holding several feeds with replicas shares its counted pods among them in feed
order, each up to what it was assigned: exact for one replicated feed per Description (dividing
scheduling's case), and never counting one pod twice otherwise.

Kept per Subscription and indexed per cluster with a generation counter, so a change to one
binding, one Description status or one cluster's inventory touches only its clusters, and the
predictor's cache of a cluster's room stays valid while that cluster's reservations and inventory
do not change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

from clusternet_nats.api.apps import FeedInventory, FeedOrder
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.domain.nodefit import Demand, RequirementError


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


Landed = Callable[[str, FeedOrder, int], int]
"""Of `assigned` replicas of a feed bound to a cluster (`ns/name`), how many the cluster's node
inventory already counts (or, without per-Description counts, its status reports ready)."""


def pending_replicas(
    subscription: str,
    binding: SubscriptionBinding | None,
    finv: FeedInventory | None,
    landed: Landed,
    clusters: Collection[str] | None = None,
    positions: Mapping[str, int] | None = None,
) -> list[Pending]:
    """Per bound cluster (of `clusters` only, when given) and feed with replicas, those assigned
    and not landed yet."""
    if binding is None or finv is None:
        return []
    if clusters is None:
        bound = list(enumerate(binding.binding_clusters))
    else:  # a change on these clusters: their positions only, not every bound cluster's count
        where = positions if positions is not None else binding_positions(binding)
        bound = [(i, cluster) for cluster in clusters if (i := where.get(cluster, -1)) >= 0]
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
        for i, cluster in bound:
            assigned = shares[i] if i < len(shares) else 0
            missing = assigned - landed(cluster, order, assigned) if assigned else 0
            if missing > 0:
                out.append(Pending(subscription, key, cluster, missing, demand))
    return out


def binding_positions(binding: SubscriptionBinding) -> dict[str, int]:
    """Each bound cluster's position in the binding (where its replicas are in each feed's list);
    kept per binding by the caller, since a rollout asks once per cluster."""
    return {cluster: i for i, cluster in enumerate(binding.binding_clusters)}


class Reservations:
    def __init__(self) -> None:
        self._by_cluster: dict[str, dict[tuple[str, str], Pending]] = {}
        self._clusters_of: dict[str, set[str]] = {}
        self._generation: dict[str, int] = {}

    def replace(self, subscription: str, pending: list[Pending], clusters: Collection[str] | None = None) -> None:
        """Sets what `subscription` reserves (on `clusters` only, when given: the others keep
        theirs); bumps the generation of every cluster it touched."""
        held = self._clusters_of.pop(subscription, set())
        touched = held if clusters is None else held & set(clusters)
        for cluster in touched:
            entries = self._by_cluster.get(cluster, {})
            for key in [k for k in entries if k[0] == subscription]:
                del entries[key]
            if not entries:
                self._by_cluster.pop(cluster, None)
        now = {p.cluster for p in pending}
        for p in pending:
            self._by_cluster.setdefault(p.cluster, {})[(subscription, p.feed)] = p
        if kept := (held - touched) | now:
            self._clusters_of[subscription] = kept
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

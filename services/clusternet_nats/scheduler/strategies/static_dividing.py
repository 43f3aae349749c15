"""Static dividing: each feed's replicas split over clusters in proportion to subscriber weights.

Mirrors Clusternet's StaticAssigner: a cluster's weight is the sum of the positive weights of
the subscribers whose clusterAffinity selects it; each cluster first gets the floor of its share,
then the replicas left over go one each to the clusters of highest weight (ties to the earlier
cluster in bindingClusters order). Feeds that are not workloads get an empty list, and if no
cluster has weight nothing is divided at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.scheduler.strategies.interface import DesiredReplicas


def cluster_weights(sub: Subscription, clusters: Sequence[ManagedCluster]) -> list[int]:
    weights = []
    for cluster in clusters:
        labels = cluster.metadata.labels or {}
        weights.append(
            sum(
                s.weight
                for s in sub.spec.subscribers
                if s.weight is not None and s.weight > 0 and s.cluster_affinity.matches(labels)
            )
        )
    return weights


def divide(replicas: int, weights: Sequence[int]) -> list[int]:
    total = sum(weights)
    shares = [weight * replicas // total for weight in weights]
    remain = replicas - sum(shares)
    by_weight = sorted(range(len(weights)), key=lambda i: -weights[i])
    for i in by_weight[:remain]:
        shares[i] += 1
    return shares


class StaticDividing:
    def assign(
        self, sub: Subscription, clusters: Sequence[ManagedCluster], desired: DesiredReplicas
    ) -> dict[str, list[int]]:
        weights = cluster_weights(sub, clusters)
        if sum(weights) == 0:
            return {}
        result: dict[str, list[int]] = {}
        for feed in sub.spec.feeds:
            replicas = desired(feed)
            result[feed_key(feed)] = [] if replicas is None else divide(replicas, weights)
        return result

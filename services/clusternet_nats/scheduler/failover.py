"""Graceful failover of divided replicas: the new placement is bound before the old is withdrawn.

When a bound cluster can no longer be scheduled to (NotReady gives it the `unschedulable` taint;
an untolerated taint or a label change does the same), its share is taken out of the placement
the assigner builds on, so the assigner places that share on healthy clusters as a scale-up
(replicas already placed elsewhere stay where they are). The binding written then holds the new
placement plus the failed cluster with its old share, listed in `draining_clusters`: the
deployer keeps its Description, so whatever still runs there keeps serving (a cluster cut off
from the hub may well be running). Once every other bound cluster reports at least its share of
each divided feed available (the deployer's aggregated status), the next reconcile drops the
draining cluster and the deployer withdraws it. A deleted cluster has nothing to keep and is
dropped at once.

A cluster that returns gets nothing back by itself: its share now lives elsewhere, and dynamic
dividing re-divides only on a spec or FeedInventory change, as Clusternet's does; so replicas do
not flap back. Static dividing gives it its weight again on the next such change.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from clusternet_nats.api.apps import SubscriptionStatus
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.domain.feeds import feed_key

Available = Mapping[str, Mapping[str, int]]
"""Per cluster id, per feed key, the replicas the cluster reports available."""


def without(binding: SubscriptionBinding, clusters: Collection[str]) -> SubscriptionBinding:
    """The binding with these clusters and their shares taken out: what the assigner builds on."""
    keep = [i for i, name in enumerate(binding.binding_clusters) if name not in clusters]
    return binding.model_copy(
        update={
            "binding_clusters": [binding.binding_clusters[i] for i in keep],
            "replicas": {
                feed: [shares[i] for i in keep if i < len(shares)] if shares else []
                for feed, shares in binding.replicas.items()
            },
            "draining_clusters": [],
        }
    )


def share_of(binding: SubscriptionBinding, cluster: str) -> dict[str, int]:
    index = binding.binding_clusters.index(cluster)
    return {feed: shares[index] for feed, shares in binding.replicas.items() if index < len(shares)}


def with_draining(
    new: SubscriptionBinding, old: SubscriptionBinding, draining: Collection[str]
) -> SubscriptionBinding:
    """`new` plus each draining cluster (not placed anew) with the share it had in `old`."""
    kept = sorted(c for c in draining if c not in new.binding_clusters and c in old.binding_clusters)
    if not kept:
        return new
    clusters = sorted([*new.binding_clusters, *kept])
    shares = {c: share_of(old, c) for c in kept}
    replicas: dict[str, list[int]] = {}
    for feed, placed in new.replicas.items():
        if not placed:
            replicas[feed] = []
            continue
        by_cluster = dict(zip(new.binding_clusters, placed, strict=False))
        replicas[feed] = [by_cluster[c] if c in by_cluster else shares[c].get(feed, 0) for c in clusters]
    predicted = {
        feed: [dict(zip(new.binding_clusters, figures, strict=False)).get(c) for c in clusters]
        for feed, figures in new.predicted_replicas.items()
    }
    return new.model_copy(
        update={
            "binding_clusters": clusters,
            "replicas": replicas,
            "predicted_replicas": predicted,
            "desired_releases": len(clusters),
            "draining_clusters": kept,
        }
    )


def available_replicas(status: SubscriptionStatus | None) -> dict[str, dict[str, int]]:
    """Per cluster id, per feed key, the available replicas in the deployer's aggregated status."""
    found: dict[str, dict[str, int]] = {}
    for aggregated in (status.aggregated_statuses if status is not None else None) or []:
        key = feed_key(aggregated)
        for detail in aggregated.feed_status_details or []:
            counters = detail.replica_status
            if detail.cluster_id is not None and counters is not None:
                found.setdefault(detail.cluster_id, {})[key] = counters.available_replicas or 0
    return found


def replacement_available(
    binding: SubscriptionBinding, cluster_ids: Mapping[str, str], available: Available
) -> bool:
    """Whether every bound cluster not draining reports at least its share of each divided feed."""
    for index, cluster in enumerate(binding.binding_clusters):
        if cluster in binding.draining_clusters:
            continue
        reported = available.get(cluster_ids.get(cluster, ""), {})
        for feed, shares in binding.replicas.items():
            if index < len(shares) and reported.get(feed, 0) < shares[index]:
                return False
    return True

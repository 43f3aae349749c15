"""A Subscription's status as Clusternet shows it, though two services write it apart.

Clusternet keeps one status with two writers: the scheduler (bindingClusters, replicas, specHash,
desiredReleases) and the deployer (aggregatedStatuses, completedReleases). Here the scheduler
writes a `SubscriptionBinding` and the deployer the status record, so they never compare-and-set
one key; this module says how they join. A binding made for an earlier Subscription of the same
name (another uid) belongs to nothing, and the deployer acts only on a binding made for the
current spec (its specHash), as Clusternet's deployer waits for the scheduler.
"""

from __future__ import annotations

import itertools
from typing import Any, TypeVar

from clusternet_nats.api.apps import Subscription, SubscriptionStatus
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.registry import KindInfo
from pydantic import BaseModel

_T = TypeVar("_T")


def has_binding(info: KindInfo) -> bool:
    """Whether the scheduler's binding is part of this kind's status (a Subscription's only)."""
    return info.kind == Subscription.KIND


def binding_is_for(binding: SubscriptionBinding, obj: KubeObject) -> bool:
    return binding.subscription_uid == obj.metadata.uid


def scheduled(binding: SubscriptionBinding, sub: Subscription) -> bool:
    """Whether `binding` is the scheduler's decision for this Subscription's current spec."""
    return binding_is_for(binding, sub) and binding.spec_hash == spec_hash(sub.spec)


def with_binding(status: BaseModel, binding: SubscriptionBinding, obj: KubeObject) -> BaseModel:
    """`status` as users read it: a Subscription's with the scheduler's part of its binding."""
    if not isinstance(status, SubscriptionStatus) or not binding_is_for(binding, obj):
        return status
    update: dict[str, Any] = {
        "binding_clusters": binding.binding_clusters,
        "replicas": binding.replicas,
        "spec_hash": binding.spec_hash,
        "desired_releases": binding.desired_releases,
        # Our additions stay out of the status while empty, so it reads as Clusternet's.
        "conditions": [binding.condition] if binding.condition is not None else None,
        "unscheduled_replicas": binding.unscheduled_replicas or None,
        "predicted_replicas": binding.predicted_replicas or None,
        "draining_clusters": binding.draining_clusters or None,
    }
    return status.model_copy(update=update)


def in_cluster_order(binding: SubscriptionBinding) -> SubscriptionBinding:
    """`binding` with its clusters in name order, each feed's replicas and predictions following
    their cluster (Clusternet's DefaultBinder sorts its TargetClusters so before it writes them)."""
    clusters = binding.binding_clusters
    if all(a <= b for a, b in itertools.pairwise(clusters)):
        return binding  # the common case, checked without sorting: the reconciler sorts first
    order = sorted(range(len(clusters)), key=clusters.__getitem__)

    def follow(values: list[_T]) -> list[_T]:
        # A feed that is not divided has no replicas per cluster ([]): nothing to reorder.
        return [values[i] for i in order] if len(values) == len(clusters) else values

    return binding.model_copy(
        update={
            "binding_clusters": [clusters[i] for i in order],
            "replicas": {feed: follow(values) for feed, values in binding.replicas.items()},
            "predicted_replicas": {feed: follow(values) for feed, values in binding.predicted_replicas.items()},
        }
    )

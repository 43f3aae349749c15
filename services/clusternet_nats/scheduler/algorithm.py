"""One scheduling decision from cached state, with no I/O: filter, score, then place.

Kept apart from the reconciler so a whole decision is testable as a pure function, and the
reconciler is only about reading caches, writing the binding and telling humans.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.framework import Framework
from clusternet_nats.scheduler.plugins import ClusterAffinityFilter, TaintTolerationFilter, TaintTolerationScore
from clusternet_nats.scheduler.strategies import DesiredReplicas, strategy_for


def default_framework() -> Framework:
    """Clusternet's default profile (TaintToleration scores with weight 3), plus cluster affinity."""
    return Framework(
        filters=[ClusterAffinityFilter(), TaintTolerationFilter()],
        scorers=[(TaintTolerationScore(), 3)],
    )


@dataclass(frozen=True)
class Decision:
    binding: SubscriptionBinding
    failure: str | None
    """Why no cluster is feasible (the FailedScheduling message); None when some are."""
    scores: dict[str, int]


def schedule(
    framework: Framework, sub: Subscription, clusters: Iterable[ManagedCluster], desired: DesiredReplicas
) -> Decision:
    """Raises UnsupportedStrategyError, or ManifestMissingError from `desired`."""
    strategy = strategy_for(sub.spec)
    candidates = sorted(
        (c for c in clusters if c.metadata.deletion_timestamp is None), key=lambda c: c.namespaced_name()
    )
    feasible, diagnosis = framework.find_feasible(sub, candidates)
    names = [cluster.namespaced_name() for cluster in feasible]
    binding = SubscriptionBinding(
        subscription_uid=sub.metadata.uid or "",
        spec_hash=spec_hash(sub.spec),
        binding_clusters=names,
        replicas=strategy.assign(sub, feasible, desired) if feasible else {},
        desired_releases=len(names),
    )
    return Decision(
        binding=binding,
        failure=None if feasible else diagnosis.summary(len(candidates)),
        scores=framework.run_scores(sub, feasible),
    )

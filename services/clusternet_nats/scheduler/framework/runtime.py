"""A scheduling profile: runs filter plugins per cluster, keeping why each cluster was rejected,
and weighted score plugins over the feasible ones.

Filters run in order and stop at a cluster's first failure, as Kubernetes' do, so every
rejected cluster has exactly one reason and the "0/N clusters are available: ..." summary adds
up to N.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.framework.interfaces import FilterPlugin, ScorePlugin, Status

NO_CLUSTERS = "no clusters available to schedule subscriptions"


@dataclass
class Diagnosis:
    """Why each rejected cluster (by namespaced name) was rejected."""

    rejected: dict[str, Status] = field(default_factory=dict)

    def summary(self, evaluated: int) -> str:
        """Clusternet's FitError message: reasons counted, sorted, after "0/N clusters are available"."""
        if evaluated == 0:
            return NO_CLUSTERS
        counts = Counter(reason for status in self.rejected.values() for reason in status.reasons)
        reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
        return f"0/{evaluated} clusters are available: {', '.join(reasons)}."


class Framework:
    def __init__(self, filters: Sequence[FilterPlugin], scorers: Sequence[tuple[ScorePlugin, int]]) -> None:
        self.filters = list(filters)
        self.scorers = list(scorers)

    def run_filters(self, sub: Subscription, cluster: ManagedCluster) -> Status:
        for plugin in self.filters:
            status = plugin.filter(sub, cluster)
            if not status.is_success:
                return status
        return Status()

    def find_feasible(
        self, sub: Subscription, clusters: Sequence[ManagedCluster]
    ) -> tuple[list[ManagedCluster], Diagnosis]:
        feasible: list[ManagedCluster] = []
        diagnosis = Diagnosis()
        for cluster in clusters:
            status = self.run_filters(sub, cluster)
            if status.is_success:
                feasible.append(cluster)
            else:
                diagnosis.rejected[cluster.namespaced_name()] = status
        return feasible, diagnosis

    def run_scores(self, sub: Subscription, clusters: Sequence[ManagedCluster]) -> dict[str, int]:
        """Each cluster's sum of weight * score over the score plugins."""
        totals = {cluster.namespaced_name(): 0 for cluster in clusters}
        for plugin, weight in self.scorers:
            for name, score in plugin.score(sub, clusters).items():
                totals[name] += weight * score
        return totals

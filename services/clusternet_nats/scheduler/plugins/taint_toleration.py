"""TaintToleration, as Clusternet's: NoSchedule and NoExecute taints the Subscription does not
tolerate rule a cluster out; untolerated PreferNoSchedule taints only lower its score.

A cluster that stops being ready gets Clusternet's `clusters.clusternet.io/unschedulable`
NoSchedule taint, so this plugin is also what keeps unhealthy clusters out of new bindings.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Taint, TaintEffect, Toleration
from clusternet_nats.domain.dividing import normalize_scores
from clusternet_nats.scheduler.framework.interfaces import MAX_SCORE, Status

NAME = "TaintToleration"
_FILTERED = (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)


def _tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    return any(toleration.tolerates(taint) for toleration in tolerations)


class TaintToleration:
    """Filter, Score and NormalizeScore in one plugin, as Clusternet's."""

    name = NAME

    def filter(self, sub: Subscription, cluster: ManagedCluster) -> Status:
        tolerations = sub.spec.cluster_tolerations or []
        for taint in cluster.spec.taints or []:
            if taint.effect in _FILTERED and not _tolerated(taint, tolerations):
                reason = f"cluster(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"
                return Status.unschedulable(self.name, reason)
        return Status()

    def score(self, sub: Subscription, clusters: Sequence[ManagedCluster]) -> dict[str, int]:
        """The raw score: how many PreferNoSchedule taints the Subscription does not tolerate."""
        tolerations = [
            t for t in sub.spec.cluster_tolerations or [] if t.effect in (None, "", TaintEffect.PREFER_NO_SCHEDULE)
        ]
        return {
            cluster.namespaced_name(): sum(
                1
                for taint in cluster.spec.taints or []
                if taint.effect == TaintEffect.PREFER_NO_SCHEDULE and not _tolerated(taint, tolerations)
            )
            for cluster in clusters
        }

    def normalize_score(self, sub: Subscription, scores: dict[str, int]) -> dict[str, int]:
        """Fewer untolerated taints score higher; the fewest score MAX_SCORE."""
        return normalize_scores(scores, MAX_SCORE, reverse=True)

"""A scheduling profile: the enabled plugins of each extension point, run in Clusternet's order.

Filters run in order and stop at a cluster's first failure, as Kubernetes' do, so every
rejected cluster has exactly one reason and the "0/N clusters are available: ..." summary adds
up to N. Predict plugins answer for all feasible clusters in one call each; with several, a
cluster gets the smaller answer per feed. Score plugins' raw scores go through their own
normalisation (if any) before their weight multiplies them. Assign plugins are tried in order
until one does not skip. The bind cycle (Reserve, Permit, PreBind, Bind, PostBind) is what
writes the decision; a failure after Reserve unreserves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.domain.dividing import merge_feed_replicas
from clusternet_nats.scheduler.framework.interfaces import (
    EMPTY_HANDLE,
    SUCCESS,
    AssignPlugin,
    Binder,
    BindPlugin,
    CycleState,
    FeedReplicas,
    FilterPlugin,
    Handle,
    PermitPlugin,
    PostAssignPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreAssignPlugin,
    PreBindPlugin,
    PredictPlugin,
    PreFilterPlugin,
    PrePredictPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScoreNormalizer,
    ScorePlugin,
    Status,
    TargetClusters,
)

NO_CLUSTERS = "no clusters available to schedule subscriptions"
NO_ASSIGNER = "no Assign plugin handled the subscription"
NO_BINDER = "no Bind plugin bound the subscription"


@dataclass
class Diagnosis:
    """Why each rejected cluster (by namespaced name) was rejected."""

    rejected: dict[str, Status] = field(default_factory=dict)

    def summary(self, evaluated: int) -> str:
        return fit_error(evaluated, self.rejected)


def fit_error(evaluated: int, rejected: dict[str, Status]) -> str:
    """Clusternet's FitError message: reasons counted, sorted, after "0/N clusters are available"."""
    if evaluated == 0:
        return NO_CLUSTERS
    counts = Counter(reason for status in rejected.values() for reason in status.reasons)
    reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{evaluated} clusters are available: {', '.join(reasons)}."


@dataclass
class Plugins:
    """The enabled plugins of a profile, per extension point, in the order they run."""

    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_predict: list[PrePredictPlugin] = field(default_factory=list)
    predict: list[PredictPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[tuple[ScorePlugin, int]] = field(default_factory=list)
    pre_assign: list[PreAssignPlugin] = field(default_factory=list)
    assign: list[AssignPlugin] = field(default_factory=list)
    post_assign: list[PostAssignPlugin] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)


class Framework:
    """One profile: its plugins, and what they may read beyond the Subscription (`handle`)."""

    def __init__(
        self,
        plugins: Plugins | None = None,
        *,
        profile_name: str = "default",
        percentage_of_clusters_to_score: int = 0,
        handle: Handle = EMPTY_HANDLE,
    ) -> None:
        self.plugins = plugins or Plugins()
        self.profile_name = profile_name
        self.percentage_of_clusters_to_score = percentage_of_clusters_to_score
        self.handle = handle

    # -- filtering ---------------------------------------------------------------------------

    def run_pre_filter(self, state: CycleState) -> Status:
        return _first_failure(plugin.pre_filter(state) for plugin in self.plugins.pre_filter)

    def run_filters(self, sub: Subscription, cluster: ManagedCluster) -> Status:
        for plugin in self.plugins.filter:
            status = plugin.filter(sub, cluster)
            if not status.is_success:
                return status
        return SUCCESS

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

    def run_post_filter(self, state: CycleState) -> Status:
        """Until one plugin makes room (success); Unschedulable when none does."""
        status = Status.unschedulable("", "no PostFilter plugin made room")
        for plugin in self.plugins.post_filter:
            status = plugin.post_filter(state)
            if status.is_success:
                return status
        return status

    # -- predicting --------------------------------------------------------------------------

    def run_pre_predict(self, state: CycleState) -> Status:
        return _first_failure(plugin.pre_predict(state) for plugin in self.plugins.pre_predict)

    async def run_predict(
        self, sub: Subscription, finv: FeedInventory, clusters: Sequence[ManagedCluster]
    ) -> dict[str, FeedReplicas]:
        """Each cluster any plugin answered for; with several plugins, the smaller answer per feed,
        and a cluster one of them could not predict is left out."""
        result: dict[str, FeedReplicas] | None = None
        for plugin in self.plugins.predict:
            answer = await plugin.predict(sub, finv, clusters)
            if result is None:
                result = dict(answer)
            else:
                result = {key: merge_feed_replicas(result[key], answer[key]) for key in result if key in answer}
        return result or {}

    # -- scoring -----------------------------------------------------------------------------

    def run_pre_score(self, state: CycleState) -> Status:
        return _first_failure(plugin.pre_score(state) for plugin in self.plugins.pre_score)

    def run_scores(self, sub: Subscription, clusters: Sequence[ManagedCluster]) -> dict[str, int]:
        """Each cluster's sum of weight * (normalised) score over the score plugins; 1 each when
        there are none (as Clusternet's prioritizeClusters)."""
        totals = {cluster.namespaced_name(): 0 if self.plugins.score else 1 for cluster in clusters}
        for plugin, weight in self.plugins.score:
            scores = plugin.score(sub, clusters)
            if isinstance(plugin, ScoreNormalizer):
                scores = plugin.normalize_score(sub, scores)
            for name, score in scores.items():
                totals[name] += weight * score
        return totals

    # -- assigning ---------------------------------------------------------------------------

    def run_pre_assign(self, state: CycleState, selected: TargetClusters) -> Status:
        return _first_failure(plugin.pre_assign(state, selected) for plugin in self.plugins.pre_assign)

    def run_assign(self, state: CycleState, selected: TargetClusters) -> tuple[TargetClusters, Status]:
        for plugin in self.plugins.assign:
            target, status = plugin.assign(state, selected)
            if not status.skip:
                return target, status
        return selected, Status.unschedulable("", NO_ASSIGNER)

    def run_post_assign(self, state: CycleState, target: TargetClusters) -> Status:
        return _first_failure(plugin.post_assign(state, target) for plugin in self.plugins.post_assign)

    # -- binding -----------------------------------------------------------------------------

    async def run_bind_cycle(self, sub: Subscription, binding: SubscriptionBinding, binder: Binder) -> Status:
        """Reserve, Permit, PreBind, Bind (the first plugin that does not skip), PostBind.
        A failure unreserves and is returned; PostBind runs only after a successful bind."""
        for index, reserver in enumerate(self.plugins.reserve):
            status = await reserver.reserve(sub, binding)
            if status.reasons:
                await self._unreserve(sub, binding, self.plugins.reserve[: index + 1])
                return status
        status = await self._permit_and_bind(sub, binding, binder)
        if status.reasons:
            await self._unreserve(sub, binding, self.plugins.reserve)
            return status
        for post in self.plugins.post_bind:
            await post.post_bind(sub, binding)
        return SUCCESS

    async def _permit_and_bind(self, sub: Subscription, binding: SubscriptionBinding, binder: Binder) -> Status:
        for permit in self.plugins.permit:
            status = await permit.permit(sub, binding)
            if status.reasons:
                return status
        for pre in self.plugins.pre_bind:
            status = await pre.pre_bind(sub, binding)
            if status.reasons:
                return status
        for plugin in self.plugins.bind:
            status = await plugin.bind(sub, binding, binder)
            if not status.skip:
                return status
        return Status.unschedulable("", NO_BINDER)

    @staticmethod
    async def _unreserve(sub: Subscription, binding: SubscriptionBinding, reservers: Sequence[ReservePlugin]) -> None:
        for reserver in reversed(reservers):
            await reserver.unreserve(sub, binding)


def _first_failure(statuses: Iterable[Status]) -> Status:
    """The first status with reasons; a skip counts as success outside Assign and Bind."""
    for status in statuses:
        if status.reasons:
            return status
    return SUCCESS

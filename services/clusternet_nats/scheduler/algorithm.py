"""One scheduling decision from cached state: Clusternet's genericScheduler.Schedule.

Filter, predict (dynamic dividing only), score, group by subscriber (schedulingBySubGroup),
then assign replicas; when replicas are left without room, PostFilter plugins (preemption) may
make some and the division runs once more. The only I/O is the Predict plugins' one batch call
each, so a whole decision is testable with clusters, a Subscription and a FeedInventory.

Departures from Clusternet, for reasons:

* Clusters are visited in name order, those already bound first, instead of from a start index
  that rotates between cycles: a level-triggered reconciler must reach the same answer twice
  (and replicas stay where they are). The number kept for dividing over more than 100 clusters
  is Clusternet's (`domain.dividing.num_feasible_clusters_to_find`).
* Clusters are ordered by score, ties by name (Clusternet's sort is not stable).
* A cluster that matches several subscribers is bound once in subgroup scheduling.
* Replicas that cannot be placed are in the decision (`unscheduled`) with a message saying why,
  not dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from clusternet_nats.api.apps import FeedInventory, SchedulingStrategy, Subscription
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.domain.dividing import MIN_FEASIBLE_CLUSTERS_TO_FIND, num_feasible_clusters_to_find
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.scheduler.framework.interfaces import CycleState, FeedReplicas, Status, TargetClusters
from clusternet_nats.scheduler.framework.runtime import Framework, fit_error
from clusternet_nats.scheduler.plugins.cluster_affinity import selected as selected_by_affinity
from clusternet_nats.scheduler.plugins.dynamic_assigner import is_dynamic

NOT_PREDICTED = "cluster(s) could not be predicted"
NO_ROOM = "cluster(s) had no room for more replicas"
LEFT_OUT = "cluster(s) left out by the dividing rules"


@dataclass(frozen=True)
class Decision:
    binding: SubscriptionBinding
    failure: str | None
    """Why the Subscription is not (fully) placed (the FailedScheduling message); None when it is."""
    scores: dict[str, int]
    unscheduled: dict[str, int] = field(default_factory=dict)
    """Per feed key, replicas no cluster could take."""
    predictions: dict[str, FeedReplicas] = field(default_factory=dict)
    """Per feasible cluster, what the predictors said it can take (for `cnet describe`)."""
    preempted: list[str] = field(default_factory=list)
    """Keys of lower-priority Subscriptions whose room this decision took: reschedule them."""


async def schedule(
    framework: Framework,
    sub: Subscription,
    clusters: Iterable[ManagedCluster],
    finv: FeedInventory | None,
    current: SubscriptionBinding | None,
) -> Decision:
    candidates = sorted((c for c in clusters if c.metadata.deletion_timestamp is None), key=_key)
    state = CycleState(sub, finv, current, framework.handle, candidates=candidates)
    status = framework.run_pre_filter(state)
    if status.reasons:
        state.rejected = {_key(c): status for c in candidates}
        return _unplaced(state, fit_error(len(candidates), state.rejected))
    feasible, diagnosis = framework.find_feasible(sub, candidates)
    state.rejected = diagnosis.rejected
    if not feasible:
        return _unplaced(state, fit_error(len(candidates), state.rejected))
    dividing = sub.spec.scheduling_strategy == SchedulingStrategy.DIVIDING
    if dividing and len(feasible) > MIN_FEASIBLE_CLUSTERS_TO_FIND:  # fewer are all kept, whatever the share
        considered = sum(1 for c in candidates if selected_by_affinity(sub, c))
        feasible = _first_feasible(feasible, current, considered, framework.percentage_of_clusters_to_score)
    state.feasible = feasible
    if dividing and finv is not None and is_dynamic(sub) and framework.plugins.predict:
        status = framework.run_pre_predict(state)
        if status.reasons:
            return _unplaced(state, status.message)
        state.predictions = await framework.run_predict(sub, finv, feasible)
    status = framework.run_pre_score(state)
    if status.reasons:
        return _unplaced(state, status.message)
    state.scores = framework.run_scores(sub, feasible)
    ordered = sorted(state.scores, key=lambda key: (-state.scores[key], key))
    if sub.spec.scheduling_by_sub_group:
        grouped = _subgroups(state, ordered)
        if isinstance(grouped, Status):
            return _unplaced(state, grouped.message)
        ordered = grouped
    selected = TargetClusters(ordered)
    if not dividing:
        return _decided(state, selected)
    return await _assign(framework, state, selected)


async def _assign(framework: Framework, state: CycleState, selected: TargetClusters) -> Decision:
    status = framework.run_pre_assign(state, selected)
    if status.reasons:
        return _kept(state, status.message)
    target, status = framework.run_assign(state, selected)
    if status.reasons:
        return _kept(state, status.message)
    predicted = {key: list(values) for key, values in state.predictions.items()}
    if state.unscheduled and framework.plugins.post_filter and framework.run_post_filter(state).is_success:
        shortfall, state.unscheduled = state.unscheduled, {}
        target, status = framework.run_assign(state, selected)
        if status.reasons:
            return _kept(state, status.message)
        if state.unscheduled == shortfall:
            state.preempted.clear()
    status = framework.run_post_assign(state, target)
    if status.reasons:
        return _kept(state, status.message)
    decision = _decided(state, target)
    return replace(decision, predictions=predicted)


def _key(cluster: ManagedCluster) -> str:
    return cluster.namespaced_name()


def _first_feasible(
    feasible: list[ManagedCluster], current: SubscriptionBinding | None, considered: int, percentage: int
) -> list[ManagedCluster]:
    """Clusternet binds at most numFeasibleClustersToFind of the clusters its affinity lists;
    those already bound come first, so their replicas stay."""
    limit = num_feasible_clusters_to_find(considered, percentage)
    if len(feasible) <= limit:
        return feasible
    bound = set(current.binding_clusters) if current is not None else set()
    ordered = [c for c in feasible if _key(c) in bound] + [c for c in feasible if _key(c) not in bound]
    return sorted(ordered[:limit], key=_key)


def _subgroups(state: CycleState, ordered: Sequence[str]) -> list[str] | Status:
    """Clusternet's subgroupClusters: per subscriber, its best-scored `minClusters` clusters."""
    chosen: list[str] = []
    for i, subscriber in enumerate(state.sub.spec.subscribers):
        if subscriber.sub_group_strategy is None:
            return Status.unschedulable("", f"subscribers[{i}].subGroupStrategy: required with schedulingBySubGroup")
        affinity = subscriber.cluster_affinity
        matching = [key for key in ordered if affinity.matches(_labels(state, key))]
        chosen.extend(matching[: subscriber.sub_group_strategy.min_clusters or 0])
    return list(dict.fromkeys(chosen))


def _labels(state: CycleState, key: str) -> dict[str, str]:
    cluster = state.cluster(key)
    return (cluster.metadata.labels or {}) if cluster is not None else {}


def _binding(state: CycleState, target: TargetClusters) -> SubscriptionBinding:
    return SubscriptionBinding(
        subscription_uid=state.sub.metadata.uid or "",
        spec_hash=spec_hash(state.sub.spec),
        binding_clusters=list(target.binding_clusters),
        replicas={key: list(values) for key, values in target.replicas.items()},
        desired_releases=len(target.binding_clusters),
    )


def _decision(state: CycleState, binding: SubscriptionBinding, failure: str | None) -> Decision:
    return Decision(
        binding=binding,
        failure=failure,
        scores=dict(state.scores),
        unscheduled=dict(state.unscheduled),
        predictions=state.predictions,
        preempted=list(state.preempted),
    )


def _unplaced(state: CycleState, failure: str) -> Decision:
    """Nothing is feasible: an empty binding and why."""
    return _decision(state, _binding(state, TargetClusters()), failure)


def _kept(state: CycleState, failure: str) -> Decision:
    """Dividing failed: what is placed stays placed, and why."""
    current = state.current
    if current is None:
        return _unplaced(state, failure)
    state.unscheduled.clear()
    state.preempted.clear()
    return _decision(state, current.model_copy(update={"spec_hash": spec_hash(state.sub.spec)}), failure)


def _decided(state: CycleState, target: TargetClusters) -> Decision:
    return _decision(state, _binding(state, target), _shortfall(state, target) if state.unscheduled else None)


def _shortfall(state: CycleState, target: TargetClusters) -> str:
    """Which replicas are missing and, per cluster, why it took none or no more (counted as
    Clusternet's FitError counts reasons)."""
    missing = ", ".join(f"{count} replica(s) of {key}" for key, count in sorted(state.unscheduled.items()))
    before = state.current_target()
    orders = state.finv.spec.feeds if state.finv else []
    indices = [i for i, order in enumerate(orders) if feed_key(order) in state.unscheduled]
    keys = [feed_key(orders[i]) for i in indices]
    reasons: Counter[str] = Counter()
    took = 0
    for cluster in state.candidates:
        name = _key(cluster)
        if name in state.rejected:
            reasons.update(state.rejected[name].reasons)
        elif name not in state.predictions:
            reasons[NOT_PREDICTED] += 1
        else:
            added = [target.placed(key).get(name, 0) - before.placed(key).get(name, 0) for key in keys]
            room = [state.predictions[name][i] for i in indices]
            took += any(n > 0 for n in added)
            full = all(r is not None and n >= r for n, r in zip(added, room, strict=True))
            reasons[NO_ROOM if full else LEFT_OUT] += 1
    summary = ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))
    return f"could not place {missing}: {took}/{len(state.candidates)} clusters took replicas; {summary}."

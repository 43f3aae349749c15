"""DynamicAssigner: divides each feed's deviation over what clusters can still take.

As Clusternet's: PreAssign works out, per feed, desired replicas minus those already placed;
Assign spreads a positive deviation over the selected clusters in proportion to their predicted
room, and a negative one over the clusters holding replicas in proportion to what they hold,
and merges the result into the existing placement (`domain.dividing`), so running replicas stay
put. Departures, each for a reason:

* Replicas no cluster has room for are recorded per feed (`state.unscheduled`) rather than
  silently dropped, so the Subscription says it is not fully placed.
* Replicas on a cluster that is no longer feasible (deleted, or tainted unschedulable when it
  went NotReady) leave the placement and count as not placed, so they are divided again over
  healthy clusters (failover; Clusternet keeps them where they were).
* A cluster the predictors did not answer for gets no new replicas (Clusternet fails the
  whole cycle); what it holds stays.
* `Binpack`, `minClusters`, `maxClusters`, `preferredClusters` and `topologySpreadConstraints`,
  which Clusternet declares but never implemented (`domain.dividing.plan_scale_up`). Of a
  constraint, maxSkew, topologyKey (a cluster label), whenUnsatisfiable and minDomains apply;
  labelSelector, matchLabelKeys, nodeAffinityPolicy and nodeTaintsPolicy describe pods and nodes
  and are not used: the replicas counted are this feed's, the domains the feasible clusters'.
"""

from __future__ import annotations

from clusternet_nats.api.apps import (
    DividingType,
    DynamicDividing,
    DynamicDividingStrategy,
    SchedulingStrategy,
    Subscription,
)
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.domain.dividing import (
    DividingRules,
    FeedPlan,
    SpreadConstraint,
    TargetClusters,
    merge_feed,
    plan_scale_down,
    plan_scale_up,
)
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.domain.selectors import term_matches
from clusternet_nats.scheduler.framework.interfaces import SUCCESS, CycleState, Status

NAME = "DynamicAssigner"
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")


def is_dynamic(sub: Subscription) -> bool:
    dividing = sub.spec.dividing_scheduling
    return (
        sub.spec.scheduling_strategy == SchedulingStrategy.DIVIDING
        and dividing is not None
        and dividing.type == DividingType.DYNAMIC
    )


def _fields(cluster: ManagedCluster) -> dict[str, str]:
    return {"metadata.name": cluster.name, "metadata.namespace": cluster.namespace}


def dividing_rules(dynamic: DynamicDividing, clusters: list[ManagedCluster]) -> DividingRules | Status:
    """The spec's dividing rules over these clusters, or a failure naming the bad field."""
    preference: dict[str, int] = {}
    for cluster in clusters:
        labels, fields = cluster.metadata.labels or {}, _fields(cluster)
        terms = dynamic.preferred_clusters or []
        weight = sum(term.weight for term in terms if term_matches(term.preference, labels, fields))
        if weight:
            preference[cluster.namespaced_name()] = weight
    spread = []
    for i, con in enumerate(dynamic.topology_spread_constraints or []):
        where = f"dividingScheduling.dynamicDividing.topologySpreadConstraints[{i}]"
        if con.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            allowed = " or ".join(WHEN_UNSATISFIABLE)
            return Status.unschedulable(NAME, f"{where}.whenUnsatisfiable: must be {allowed}")
        if con.max_skew < 1:
            return Status.unschedulable(NAME, f"{where}.maxSkew: must be at least 1")
        if con.min_domains is not None and con.min_domains < 1:
            return Status.unschedulable(NAME, f"{where}.minDomains: must be at least 1")
        domains = {c.namespaced_name(): (c.metadata.labels or {}).get(con.topology_key) for c in clusters}
        hard = con.when_unsatisfiable == "DoNotSchedule"
        spread.append(SpreadConstraint(con.max_skew, domains, hard, con.min_domains if hard else None))
    return DividingRules(
        binpack=dynamic.strategy == DynamicDividingStrategy.BINPACK,
        min_clusters=dynamic.min_clusters,
        max_clusters=dynamic.max_clusters,
        preference=preference,
        spread=spread,
    )


class DynamicAssigner:
    name = NAME

    def pre_assign(self, state: CycleState, selected: TargetClusters) -> Status:
        dividing = state.sub.spec.dividing_scheduling
        if not is_dynamic(state.sub) or dividing is None:
            return SUCCESS
        if dividing.dynamic_dividing is None:
            return Status.unschedulable(self.name, "must specify field DynamicDividing when dividing type is dynamic")
        return SUCCESS

    def assign(self, state: CycleState, selected: TargetClusters) -> tuple[TargetClusters, Status]:
        dividing = state.sub.spec.dividing_scheduling
        if not is_dynamic(state.sub) or dividing is None or dividing.dynamic_dividing is None:
            return selected, Status.skipped(self.name)
        feasible = {c.namespaced_name() for c in state.feasible}
        current = state.current_target()
        known = [state.cluster(key) for key in dict.fromkeys([*selected.binding_clusters, *current.binding_clusters])]
        rules = dividing_rules(dividing.dynamic_dividing, [c for c in known if c is not None])
        if isinstance(rules, Status):
            return selected, rules
        result = _restricted(current, feasible)
        scheduled = set(result.replicas)
        for index, order in enumerate(state.finv.spec.feeds if state.finv else []):
            key = feed_key(order)
            if order.desired_replicas is None:
                if key not in scheduled:
                    merge_feed(result, key, selected.binding_clusters, None)
                continue
            held = result.placed(key)
            deviation = order.desired_replicas - sum(held.values())
            plan: FeedPlan | None = None
            if key not in scheduled or deviation > 0:
                # an answer without this feed counts as no answer for the cluster
                answered = [c for c in selected.binding_clusters if len(state.predictions.get(c, ())) > index]
                available = {c: state.predictions[c][index] for c in answered}
                plan = plan_scale_up(deviation, held, available, rules)
            elif deviation < 0:
                plan = plan_scale_down(deviation, held, rules.binpack)
            if plan is None:
                continue
            if plan.reason is not None:
                return selected, Status.unschedulable(self.name, f"{key}: {plan.reason}")
            if plan.unscheduled:
                state.unscheduled[key] = plan.unscheduled
            merge_feed(result, key, plan.clusters, plan.deltas)
        return result, SUCCESS


def _restricted(target: TargetClusters, clusters: set[str]) -> TargetClusters:
    """The placement on `clusters` only."""
    keep = [i for i, key in enumerate(target.binding_clusters) if key in clusters]
    replicas = {
        feed: [values[i] for i in keep] if len(values) == len(target.binding_clusters) else list(values)
        for feed, values in target.replicas.items()
    }
    return TargetClusters([target.binding_clusters[i] for i in keep], replicas)

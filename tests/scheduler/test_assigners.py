"""The Assign plugins on plain objects: Clusternet's tables, then the strategies it never built.

Ported (facts and numbers, not code) from clusternet pkg/scheduler/framework/plugins/defaultassigner:
* dynamic_test.go TestDynamicAssigner_Assign: all 8 cases
* algorithm_test.go TestDivideReplicas (StaticAssigner): all 5 cases
"""

from __future__ import annotations

from typing import Any

import pytest
from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.domain.dividing import DividingRules, SpreadConstraint, plan_scale_down, plan_scale_up
from clusternet_nats.scheduler.framework.interfaces import CycleState, Status, TargetClusters
from clusternet_nats.scheduler.plugins.dynamic_assigner import DynamicAssigner
from clusternet_nats.scheduler.plugins.static_assigner import StaticAssigner

from tests.scheduler.conftest import build_cluster, build_subscription


def deployment(name: str) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name}


def service(name: str) -> dict[str, str]:
    return {"apiVersion": "v1", "kind": "Service", "namespace": "default", "name": name}


F1, F3 = "apps/v1/Deployment/default/f1", "apps/v1/Deployment/default/f3"
F2, F4 = "v1/Service/default/f2", "v1/Service/default/f4"
SPREAD = {"type": "Dynamic", "dynamicDividing": {"strategy": "Spread"}}
DYNAMIC = {"schedulingStrategy": "Dividing", "dividingScheduling": SPREAD}


def inventory(sub: Subscription, desired: list[int | None]) -> FeedInventory:
    feeds = [{**f.to_json_dict(), "desiredReplicas": d} for f, d in zip(sub.spec.feeds, desired, strict=True)]
    return FeedInventory.new(sub.name, sub.namespace, spec={"feeds": feeds})


def key(name: str) -> str:
    return f"ns-{name}/mc"


def clusters(*names: str, labels: dict[str, dict[str, str]] | None = None) -> list[ManagedCluster]:
    return [build_cluster(f"ns-{n}", labels=(labels or {}).get(n)) for n in names]


def bound(sub: Subscription, names: list[str], replicas: dict[str, list[int]]) -> SubscriptionBinding:
    return SubscriptionBinding(
        subscription_uid=sub.metadata.uid or "",
        spec_hash=0,
        binding_clusters=[key(n) for n in names],
        replicas=replicas,
    )


def dynamic_state(
    sub: Subscription,
    desired: list[int | None],
    available: dict[str, list[int | None]],
    current: SubscriptionBinding | None,
    candidates: list[ManagedCluster],
) -> tuple[CycleState, TargetClusters]:
    state = CycleState(sub, inventory(sub, desired), current, candidates=candidates, feasible=candidates)
    state.predictions = {key(name): replicas for name, replicas in available.items()}
    return state, TargetClusters([key(name) for name in available])


def run_dynamic(state: CycleState, selected: TargetClusters) -> TargetClusters:
    plugin = DynamicAssigner()
    assert plugin.pre_assign(state, selected).is_success
    result, status = plugin.assign(state, selected)
    assert status.is_success, status
    return result


TEMPLATE_FEEDS = [deployment("f1"), service("f2"), deployment("f3")]
ALREADY = {F1: [1, 3, 0], F2: [], F3: [1, 1, 1]}  # f1: 4 scheduled, f3: 3
TEN = {"c1": [10, None, 10], "c2": [10, None, 10], "c3": [10, None, 10]}
GROWING = {"c1": [10, None, 10], "c2": [10, None, 20], "c3": [10, None, 30]}
NEW_C4 = {"c1": [10, None, 10], "c2": [10, None, 20], "c4": [10, None, 30]}


@pytest.mark.parametrize(
    ("desired", "available", "expected_clusters", "expected"),
    [
        pytest.param([8, None, 3], TEN, ["c1", "c2", "c3"], {F1: [3, 4, 1], F2: [], F3: [1, 1, 1]}, id="scale up f1"),
        pytest.param(
            [8, None, 9], GROWING, ["c1", "c2", "c3"], {F1: [3, 4, 1], F2: [], F3: [2, 3, 4]}, id="scale up f1 and f3"
        ),
        pytest.param([2, None, 3], {}, ["c1", "c2", "c3"], {F1: [0, 2, 0], F2: [], F3: [1, 1, 1]}, id="scale down f1"),
        pytest.param(
            [2, None, 1], {}, ["c1", "c2", "c3"], {F1: [0, 2, 0], F2: [], F3: [0, 0, 1]}, id="scale down f1 and f3"
        ),
        pytest.param(
            [8, None, 9],
            NEW_C4,
            ["c1", "c2", "c3", "c4"],
            {F1: [3, 4, 0, 1], F2: [], F3: [2, 3, 1, 3]},
            id="scale up f1 and f3 with new candidate clusters",
        ),
        pytest.param(
            [8, None, 1],
            NEW_C4,
            ["c1", "c2", "c3", "c4"],
            {F1: [3, 4, 0, 1], F2: [], F3: [0, 0, 1, 0]},
            id="scale up f1 with new candidate clusters and scale down f3",
        ),
        pytest.param([4, None, 3], NEW_C4, ["c1", "c2", "c3"], ALREADY, id="do nothing"),
    ],
)
def test_dynamic_assigner_clusternet_cases(
    desired: list[int | None],
    available: dict[str, list[int | None]],
    expected_clusters: list[str],
    expected: dict[str, list[int]],
) -> None:
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=TEMPLATE_FEEDS, **DYNAMIC)
    current = bound(sub, ["c1", "c2", "c3"], ALREADY)
    state, selected = dynamic_state(sub, desired, available, current, clusters("c1", "c2", "c3", "c4"))
    result = run_dynamic(state, selected)
    assert result == TargetClusters([key(n) for n in expected_clusters], expected)
    assert state.unscheduled == {}


def test_dynamic_assigner_adds_a_new_feed_that_has_no_replicas() -> None:
    """Clusternet's "add new secret": a new non-workload feed joins as [] and nothing moves."""
    feeds = [*TEMPLATE_FEEDS, service("f4")]
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=feeds, **DYNAMIC)
    available = {name: [*room, None] for name, room in NEW_C4.items()}
    current = bound(sub, ["c1", "c2", "c3"], ALREADY)
    state, selected = dynamic_state(sub, [4, None, 3, None], available, current, clusters("c1", "c2", "c3", "c4"))
    assert run_dynamic(state, selected) == TargetClusters([key(n) for n in ("c1", "c2", "c3")], {**ALREADY, F4: []})


def test_dynamic_assigner_reports_what_no_cluster_has_room_for() -> None:
    """Clusternet places what fits and drops the rest silently; here the rest is unscheduled."""
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=[deployment("f1")], **DYNAMIC)
    state, selected = dynamic_state(sub, [10], {"c1": [3], "c2": [4]}, None, clusters("c1", "c2"))
    assert run_dynamic(state, selected) == TargetClusters([key("c1"), key("c2")], {F1: [3, 4]})
    assert state.unscheduled == {F1: 3}


def test_dynamic_assigner_moves_replicas_off_a_cluster_no_longer_feasible() -> None:
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=[deployment("f1")], **DYNAMIC)
    healthy = clusters("c1", "c2")
    current = bound(sub, ["c1", "c2", "c3"], {F1: [2, 2, 2]})
    state, selected = dynamic_state(sub, [6], {"c1": [10], "c2": [10]}, current, healthy)
    assert run_dynamic(state, selected) == TargetClusters([key("c1"), key("c2")], {F1: [3, 3]})


def test_dynamic_assigner_gives_no_new_replicas_to_a_cluster_not_predicted() -> None:
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=[deployment("f1")], **DYNAMIC)
    state, selected = dynamic_state(sub, [6], {"c1": [10]}, bound(sub, ["c2"], {F1: [2]}), clusters("c1", "c2"))
    assert run_dynamic(state, selected) == TargetClusters([key("c2"), key("c1")], {F1: [2, 4]})


def test_dynamic_assigner_skips_others_and_requires_its_settings() -> None:
    static = build_subscription("s", "default", [{"clusterAffinity": {}}], schedulingStrategy="Dividing")
    state = CycleState(static, None, None)
    assert DynamicAssigner().assign(state, TargetClusters())[1].skip
    bare = build_subscription(
        "s", "default", [{"clusterAffinity": {}}], schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"}
    )
    status = DynamicAssigner().pre_assign(CycleState(bare, None, None), TargetClusters())
    assert status.reasons == ("must specify field DynamicDividing when dividing type is dynamic",)


# -- StaticAssigner: algorithm_test.go TestDivideReplicas ----------------------------------------

STATIC_CLUSTERS = [
    build_cluster("cluster-ns-01", "member1", labels={"a": "1"}),
    build_cluster("cluster-ns-01", "member2", labels={"b": "2"}),
    build_cluster("cluster-ns-02", "member3", labels={"a": "1", "b": "1"}),
]
A1 = {"clusterAffinity": {"matchLabels": {"a": "1"}}, "weight": 1}
B2 = {"clusterAffinity": {"matchLabels": {"b": "2"}}, "weight": 2}
B2_ZERO = {"clusterAffinity": {"matchLabels": {"b": "2"}}, "weight": 0}
B1 = {"clusterAffinity": {"matchLabels": {"b": "1"}}, "weight": 2}
E1, E2 = "apps/v1/Deployment/default/example-1", "apps/v1/Deployment/default/example-2"


@pytest.mark.parametrize(
    ("bound_to", "subscribers", "feeds", "expected"),
    [
        pytest.param(1, [A1], ["example-1"], {E1: [12]}, id="1 cluster"),
        pytest.param(2, [A1, B2], ["example-1"], {E1: [4, 8]}, id="2 clusters"),
        pytest.param(3, [A1, B2], ["example-1"], {E1: [3, 6, 3]}, id="3 clusters"),
        pytest.param(3, [A1, B2_ZERO, B1], ["example-1"], {E1: [3, 0, 9]}, id="3 clusters with duplicated weight"),
        pytest.param(
            3,
            [A1, B2_ZERO, B1],
            ["example-1", "example-2"],
            {E1: [3, 0, 9], E2: [3, 0, 9]},
            id="2 feeds, 3 clusters with duplicated weight",
        ),
    ],
)
def test_static_assigner_clusternet_cases(
    bound_to: int, subscribers: list[dict[str, Any]], feeds: list[str], expected: dict[str, list[int]]
) -> None:
    sub = build_subscription(
        "s",
        "default",
        subscribers,
        feeds=[deployment(f) for f in feeds],
        schedulingStrategy="Dividing",
        dividingScheduling={"type": "Static"},
    )
    state = CycleState(sub, inventory(sub, [12] * len(feeds)), None, candidates=STATIC_CLUSTERS)
    selected = TargetClusters([c.namespaced_name() for c in STATIC_CLUSTERS[:bound_to]])
    result, status = StaticAssigner().assign(state, selected)
    assert status.is_success
    assert result == TargetClusters(selected.binding_clusters, expected)


def test_static_assigner_leaves_feeds_without_replicas_undivided_and_skips_others() -> None:
    sub = build_subscription(
        "s", "default", [A1], feeds=[deployment("example-1"), service("cm")], schedulingStrategy="Dividing"
    )
    state = CycleState(sub, inventory(sub, [5, None]), None, candidates=STATIC_CLUSTERS)
    result, _ = StaticAssigner().assign(state, TargetClusters([STATIC_CLUSTERS[0].namespaced_name()]))
    assert result.replicas == {E1: [5], "v1/Service/default/cm": []}
    replication = build_subscription("s", "default", [A1])
    assert StaticAssigner().assign(CycleState(replication, None, None), TargetClusters())[1] == Status.skipped(
        "StaticAssigner"
    )


# -- beyond Clusternet: Binpack, min/maxClusters, preferredClusters, topology spread ---------------


BINPACK = DividingRules(binpack=True)


@pytest.mark.parametrize(
    ("deviation", "held", "available", "rules", "deltas", "unscheduled"),
    [
        pytest.param(5, {}, {"a": 4, "b": 6, "c": 10}, BINPACK, [0, 5, 0], 0, id="binpack best fit"),
        pytest.param(12, {}, {"a": 4, "b": 6, "c": 10}, DividingRules(binpack=True), [2, 0, 10], 0,
                     id="binpack fewest clusters: largest, then best fit"),
        pytest.param(3, {"a": 1}, {"a": 4, "b": 6}, DividingRules(binpack=True), [3, 0], 0,
                     id="binpack fills clusters already used first"),
        pytest.param(30, {}, {"a": 4, "b": 6}, DividingRules(binpack=True), [4, 6], 20, id="binpack short of room"),
        pytest.param(6, {}, {"a": 10, "b": 10, "c": 10}, DividingRules(max_clusters=2), [3, 3, 0], 0,
                     id="maxClusters limits the clusters used"),
        pytest.param(6, {"c": 1}, {"a": 10, "b": 10, "c": 10}, DividingRules(max_clusters=2), [3, 0, 3], 0,
                     id="maxClusters counts clusters already used"),
        pytest.param(3, {}, {"a": 100, "b": 1, "c": 1}, DividingRules(min_clusters=3), [1, 1, 1], 0,
                     id="minClusters gives each at least one"),
        pytest.param(6, {}, {"a": 10, "b": 10, "c": 10}, DividingRules(preference={"c": 5, "b": 1}), [0, 0, 6], 0,
                     id="preferred group filled first"),
        pytest.param(15, {}, {"a": 10, "b": 10, "c": 10}, DividingRules(preference={"c": 5, "b": 1}), [0, 5, 10], 0,
                     id="then the next preferred group"),
        pytest.param(4, {}, {"a": 10, "b": 10, "c": None}, DividingRules(binpack=True, preference={"a": 1}),
                     [4, 0, 0], 0, id="binpack within the preferred group"),
    ],
)
def test_plan_scale_up_beyond_clusternet(
    deviation: int,
    held: dict[str, int],
    available: dict[str, int | None],
    rules: DividingRules,
    deltas: list[int],
    unscheduled: int,
) -> None:
    plan = plan_scale_up(deviation, held, available, rules)
    assert plan.deltas == deltas
    assert plan.unscheduled == unscheduled
    assert plan.reason is None


def test_min_clusters_unmet_is_a_reason() -> None:
    plan = plan_scale_up(5, {}, {"a": 10, "b": 0}, DividingRules(min_clusters=2))
    assert plan.reason == "minClusters is 2 but only 1 cluster(s) can take replicas"
    assert plan.unscheduled == 5 and plan.deltas == [0, 0]


ZONES = {"a": "z1", "b": "z1", "c": "z2", "d": None}


def test_min_domains_counts_missing_domains_as_empty() -> None:
    """Two zones but minDomains 3: the least loaded counts as 0, so maxSkew 1 allows one per zone."""
    rules = DividingRules(spread=[SpreadConstraint(1, ZONES, hard=True, min_domains=3)])
    plan = plan_scale_up(4, {}, {"a": 10, "b": 10, "c": 10}, rules)
    assert plan.deltas == [1, 0, 1]
    assert plan.unscheduled == 2


@pytest.mark.parametrize(
    ("deviation", "held", "available", "hard", "deltas", "unscheduled"),
    [
        pytest.param(4, {}, {"a": 10, "b": 10, "c": 10}, True, [1, 1, 2], 0, id="even over two zones"),
        pytest.param(6, {}, {"a": 10, "b": 10, "c": 2}, True, [2, 1, 2], 1,
                     id="DoNotSchedule: skew 1 holds back replicas zone z2 cannot match"),
        pytest.param(6, {}, {"a": 10, "b": 10, "c": 2}, False, [2, 2, 2], 0,
                     id="ScheduleAnyway places them all"),
        pytest.param(2, {}, {"a": 10, "c": 10, "d": 10}, True, [1, 1, 0], 0,
                     id="a cluster without the key is not a domain for DoNotSchedule"),
    ],
)
def test_topology_spread_over_cluster_labels(
    deviation: int,
    held: dict[str, int],
    available: dict[str, int | None],
    hard: bool,
    deltas: list[int],
    unscheduled: int,
) -> None:
    rules = DividingRules(spread=[SpreadConstraint(1, ZONES, hard)])
    plan = plan_scale_up(deviation, held, available, rules)
    assert plan.deltas == deltas
    assert plan.unscheduled == unscheduled


@pytest.mark.parametrize(
    ("deviation", "held", "binpack", "deltas"),
    [
        pytest.param(-2, {"a": 1, "b": 3, "c": 0}, False, [-1, -1, 0], id="spread: in proportion (Clusternet)"),
        pytest.param(-2, {"a": 1, "b": 3, "c": 2}, True, [-1, 0, -1], id="binpack: emptiest first"),
    ],
)
def test_plan_scale_down(deviation: int, held: dict[str, int], binpack: bool, deltas: list[int]) -> None:
    assert plan_scale_down(deviation, held, binpack).deltas == deltas


GOLD = {"key": "tier", "operator": "In", "values": ["gold"]}


def test_dynamic_assigner_applies_the_spec_rules() -> None:
    spec = {
        "schedulingStrategy": "Dividing",
        "dividingScheduling": {
            "type": "Dynamic",
            "dynamicDividing": {
                "strategy": "Binpack",
                "preferredClusters": [
                    {"weight": 10, "preference": {"matchExpressions": [GOLD]}},
                ],
            },
        },
    }
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=[deployment("f1")], **spec)
    members = clusters("c1", "c2", "c3", labels={"c3": {"tier": "gold"}})
    state, selected = dynamic_state(sub, [12], {"c1": [20], "c2": [5], "c3": [8]}, None, members)
    assert run_dynamic(state, selected) == TargetClusters([key("c1"), key("c2"), key("c3")], {F1: [0, 4, 8]})


def test_dynamic_assigner_names_a_bad_topology_field() -> None:
    spec = {
        "schedulingStrategy": "Dividing",
        "dividingScheduling": {
            "type": "Dynamic",
            "dynamicDividing": {
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]
            },
        },
    }
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=[deployment("f1")], **spec)
    state, selected = dynamic_state(sub, [2], {"c1": [5]}, None, clusters("c1"))
    _, status = DynamicAssigner().assign(state, selected)
    assert status.reasons == (
        "dividingScheduling.dynamicDividing.topologySpreadConstraints[0].whenUnsatisfiable: "
        "must be DoNotSchedule or ScheduleAnyway",
    )


def test_an_answer_missing_the_feed_counts_as_no_answer() -> None:
    sub = build_subscription("s", "default", [{"clusterAffinity": {}}], feeds=[deployment("f1")], **DYNAMIC)
    state, selected = dynamic_state(sub, [4], {"c1": [], "c2": [10]}, None, clusters("c1", "c2"))
    assert run_dynamic(state, selected) == TargetClusters([key("c2")], {F1: [4]})

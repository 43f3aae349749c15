"""Counting replicas node by node (predictor/fit.py).

Ported from Clusternet's predictor plugin tests (pkg/predictor/framework/plugins):
defaultcompute/default_compute_test.go (3 cases), defaultaggregate/default_aggregate_test.go
(1 case), tainttoleration/taint_toleration_test.go TestTaintTolerationFilter (9 cases); the
issue's figures (3 nodes x 2 CPU: 3 CPUs -> 0, 1500m -> 3) and what we judge beyond Clusternet
(required node affinity, cordoned and not-Ready nodes, an overcommitted node, reservations).
Node scores (TestTaintTolerationScore, normalize_score_test.go) are not ported: Clusternet's
aggregator sums every feasible node whatever its score, so scores never change an answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from clusternet_nats.api.apps import ReplicaRequirements, ResourceRequirements
from clusternet_nats.api.inventory import NodeInventory, NodeInventoryItem
from clusternet_nats.domain.nodefit import Demand, RequirementError, untolerated_taint
from clusternet_nats.predictor.fit import (
    MAX_REPLICAS,
    NodeRoom,
    NoFeasibleNodes,
    max_acceptable_replicas,
    replicas_on,
    reserve,
    rooms,
)
from clusternet_nats.predictor.messages import accommodation_subject, parse_accommodation_subject
from clusternet_nats.predictor.service import ready_replicas

GI = 2**30


def demand(**requirements: Any) -> Demand:
    return Demand.of(ReplicaRequirements.model_validate(requirements))


def requests(cpu: str = "0", memory: str = "0", **more: str) -> Demand:
    return demand(resources={"requests": {"cpu": cpu, "memory": memory, **more}})


def node(name: str = "n", allocatable: dict[str, Any] | None = None, **fields: Any) -> NodeInventoryItem:
    return NodeInventoryItem.model_validate({"name": name, "allocatable": allocatable or {}, **fields})


def cluster(*nodes: NodeInventoryItem) -> list[NodeRoom]:
    return rooms(NodeInventory(cluster_id="c", nodes=list(nodes)))


# defaultcompute: a node of 8 CPU, 16Gi, 4 pods, 16Gi ephemeral storage running two pods; one
# replica of 1 CPU and 1Gi.
MACHINE = {"cpu": "8", "memory": "16Gi", "pods": "4", "ephemeral-storage": "16Gi"}


@pytest.mark.parametrize(
    ("running", "want"),
    [
        ({"cpu": "2", "memory": str(8 * GI), "ephemeral-storage": "5Gi", "pods": "2"}, 2),  # pod slots
        ({"cpu": "7", "memory": str(8 * GI), "ephemeral-storage": "6Gi", "pods": "2"}, 1),  # CPU
        ({"cpu": "2", "memory": str(15 * GI), "ephemeral-storage": "3Gi", "pods": "2"}, 1),  # memory
    ],
    ids=["case_0", "case_1", "case_2"],
)
def test_default_computer(running: dict[str, str], want: int) -> None:
    (machine,) = cluster(node("machine", MACHINE, requested=running))
    assert replicas_on(requests("1", "1Gi", **{"ephemeral-storage": "0"}), machine.free) == want


def test_default_aggregator_sums_nodes() -> None:
    nodes = cluster(node("node1", {"cpu": "4", "pods": "110"}), node("node2", {"cpu": "10", "pods": "110"}))
    assert max_acceptable_replicas(requests("1"), nodes) == 14


TAINT_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]], str | None]] = [
    (
        "no tolerations, tainted node",
        [],
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        "dedicated",
    ),
    (
        "tolerates the dedicated node of user1",
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        None,
    ),
    (
        "tolerates user2, node is user1's",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        "dedicated",
    ),
    (
        "Exists tolerates any value",
        [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        None,
    ),
    (
        "every taint tolerated",
        [
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        ],
        [
            {"key": "dedicated", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "value": "bar", "effect": "NoSchedule"},
        ],
        None,
    ),
    (
        "effect differs",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        "foo",
    ),
    (
        "empty toleration effect tolerates NoSchedule",
        [{"key": "foo", "operator": "Equal", "value": "bar"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        None,
    ),
    (
        "PreferNoSchedule is not filtered (mismatching toleration)",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}],
        None,
    ),
    (
        "PreferNoSchedule is not filtered (no toleration)",
        [],
        [{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}],
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "untolerated"), TAINT_CASES, ids=[c[0] for c in TAINT_CASES]
)
def test_taint_toleration_filter(
    name: str, tolerations: list[dict[str, str]], taints: list[dict[str, str]], untolerated: str | None
) -> None:
    (room,) = cluster(node("nodeA", {"cpu": "1"}, taints=taints))
    found = untolerated_taint(demand(tolerations=tolerations), room)
    assert (found.key if found else None) == untolerated
    if untolerated:
        with pytest.raises(NoFeasibleNodes, match=r"1 node\(s\) had untolerated taint \{dedicated: user1\}|foo: bar"):
            max_acceptable_replicas(demand(tolerations=tolerations), [room])


def three_nodes_of_two_cpus(**fields: Any) -> list[NodeRoom]:
    return cluster(*(node(f"n{i}", {"cpu": "2", "memory": "8Gi", "pods": "110"}, **fields) for i in range(3)))


def test_a_replica_counts_only_where_it_fits_on_one_node() -> None:
    nodes = three_nodes_of_two_cpus()
    assert max_acceptable_replicas(requests("3"), nodes) == 0
    assert max_acceptable_replicas(requests("1500m"), nodes) == 3
    assert max_acceptable_replicas(requests("500m", "1Gi"), nodes) == 12


def test_what_already_runs_is_subtracted_and_pods_cap() -> None:
    busy = cluster(
        node("a", {"cpu": "2", "pods": "110"}, requested={"cpu": "1500m", "pods": "3"}),
        node("b", {"cpu": "2", "pods": "4"}, requested={"cpu": "0", "pods": "3"}),
    )
    assert max_acceptable_replicas(requests("500m"), busy) == 1 + 1
    assert max_acceptable_replicas(Demand(), busy) == 107 + 1


def test_nothing_bounds_a_demand_without_requests_nor_pods() -> None:
    assert max_acceptable_replicas(Demand(), cluster(node("a", {"cpu": "1"}))) == MAX_REPLICAS
    assert max_acceptable_replicas(requests("0"), cluster(node("a", {"cpu": "1"}))) == MAX_REPLICAS


def test_a_resource_the_node_lacks_fits_zero_times() -> None:
    gpu = demand(resources={"requests": {"nvidia.com/gpu": "1"}})
    assert max_acceptable_replicas(gpu, three_nodes_of_two_cpus()) == 0


def test_a_node_selector_no_node_matches_is_an_error() -> None:
    nodes = cluster(
        node("ssd", {"cpu": "4"}, labels={"disk": "ssd"}), node("hdd", {"cpu": "4"}, labels={"disk": "hdd"})
    )
    selected = demand(nodeSelector={"disk": "ssd"}, resources={"requests": {"cpu": "1"}})
    assert max_acceptable_replicas(selected, nodes) == 4
    with pytest.raises(NoFeasibleNodes, match="no feasible nodes found: 0/2 nodes are available: 2 node"):
        max_acceptable_replicas(demand(nodeSelector={"disk": "nvme"}), nodes)


def test_required_node_affinity_counts_only_matching_nodes() -> None:
    nodes = cluster(
        node("a", {"cpu": "4"}, labels={"zone": "z1"}),
        node("b", {"cpu": "4"}, labels={"zone": "z2"}),
        node("c", {"cpu": "4"}, labels={"zone": "z3"}),
    )
    terms = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]},
    ]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    assert max_acceptable_replicas(demand(affinity=affinity, resources={"requests": {"cpu": "2"}}), nodes) == 6
    only_z2 = [{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1", "z3"]}]}]
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = only_z2
    assert max_acceptable_replicas(demand(affinity=affinity, resources={"requests": {"cpu": "2"}}), nodes) == 2
    bad = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": "x"}]}}
    with pytest.raises(RequirementError, match="nodeSelectorTerms"):
        demand(affinity={"nodeAffinity": bad})


def test_cordoned_and_not_ready_nodes_take_nothing_unless_tolerated() -> None:
    nodes = cluster(
        node("ok", {"cpu": "2"}),
        node("cordoned", {"cpu": "2"}, unschedulable=True),
        node("down", {"cpu": "2"}, ready=False),
    )
    assert max_acceptable_replicas(requests("1"), nodes) == 2
    tolerant = demand(tolerations=[{"operator": "Exists"}], resources={"requests": {"cpu": "1"}})
    assert max_acceptable_replicas(tolerant, nodes) == 6


def test_an_overcommitted_node_offers_nothing_and_the_others_count() -> None:
    nodes = cluster(node("over", {"cpu": "2"}, requested={"cpu": "3"}), node("fine", {"cpu": "2"}))
    assert max_acceptable_replicas(requests("1"), nodes) == 2


def test_reservations_take_room_first_fit() -> None:
    nodes = three_nodes_of_two_cpus()
    assert reserve(requests("1500m"), 2, nodes) == 0
    assert max_acceptable_replicas(requests("1500m"), nodes) == 1
    assert max_acceptable_replicas(requests("500m"), nodes) == 1 + 1 + 4
    assert reserve(requests("3"), 1, nodes) == 1  # fits nowhere: left over


def test_demands_compare_and_hash_by_what_they_ask() -> None:
    tolerant = {"tolerations": [{"operator": "Exists"}], "resources": {"requests": {"cpu": "1"}}}
    assert demand(**tolerant) == demand(**tolerant) and hash(demand(**tolerant)) == hash(demand(**tolerant))
    assert demand(**tolerant) != requests("1") and len({demand(**tolerant), requests("1"), requests("1")}) == 2
    required: dict[str, Any] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    empty_terms = {"nodeAffinity": required}
    assert demand(affinity=empty_terms) != Demand()  # no term can match vs no affinity at all


def test_bad_quantities_name_the_field() -> None:
    resources = ResourceRequirements.model_construct(requests={"cpu": "lots"})
    unchecked = ReplicaRequirements.model_construct(resources=resources)
    with pytest.raises(RequirementError, match=r"resources\.requests\.cpu: invalid quantity 'lots'"):
        Demand.of(unchecked)


@pytest.mark.parametrize(
    ("observed", "landed"),
    [
        ({"replicas": 3, "readyReplicas": 2, "availableReplicas": 1}, 2),
        ({"replicas": 3, "availableReplicas": 1}, 1),
        ({"active": 1, "succeeded": 2, "failed": 1}, 4),
        ({"replicas": 3}, 0),
        (None, 0),
    ],
)
def test_replicas_a_workload_reports_landed(observed: dict[str, object] | None, landed: int) -> None:
    assert ready_replicas(observed) == landed


def test_subjects_round_trip_dotted_cluster_names() -> None:
    subject = accommodation_subject("clusternet-abcde", "edge.cluster-1")
    assert subject == "predictor.clusternet-abcde.edge.cluster-1.accommodation"
    assert parse_accommodation_subject(subject) == ("clusternet-abcde", "edge.cluster-1")
    assert parse_accommodation_subject("predictor.ns.name.unscheduled") is None

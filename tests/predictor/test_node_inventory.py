"""What agents put in the node inventory for the predictor: taints and cordoning from both
backends (simulated nodes by `--sim-node-taints`, real nodes from their spec), pod requests as
the kube-scheduler counts them (init containers included), through the collector."""

from __future__ import annotations

from typing import Any

import pytest
from clusternet_nats.agent.backends.kube.facts import node_facts
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.backends.sim.nodes import parse_taints_cycle
from clusternet_nats.agent.collector import LabelAggregation, StatusCollector
from clusternet_nats.api.apps import ReplicaRequirements
from clusternet_nats.api.inventory import NodeInventory
from clusternet_nats.api.meta import Taint
from clusternet_nats.domain.nodefit import Demand
from clusternet_nats.predictor.fit import max_acceptable_replicas, rooms


def test_taint_sets_parse_as_kubectl_writes_them() -> None:
    assert parse_taints_cycle("dedicated=gpu:NoSchedule,spot:PreferNoSchedule;") == [
        (Taint(key="dedicated", value="gpu", effect="NoSchedule"), Taint(key="spot", effect="PreferNoSchedule")),
        (),
    ]
    assert parse_taints_cycle("") == []
    with pytest.raises(ValueError, match="taint 'dedicated=gpu': expected key\\[=value\\]:Effect"):
        parse_taints_cycle("dedicated=gpu")
    with pytest.raises(ValueError, match="Effect one of NoExecute, NoSchedule, PreferNoSchedule"):
        parse_taints_cycle("a=b:Sometimes")


async def test_simulated_nodes_report_their_taints_through_the_collector() -> None:
    sizing = Sizing(nodes=3, node_cpu="2", node_taints=tuple(parse_taints_cycle("dedicated=gpu:NoSchedule;")))
    cluster = SimCluster("tainted", sizing)
    await cluster.start()
    collector = StatusCollector(cluster, 20, 10, False, LabelAggregation())
    nodes = (await collector.collect()).nodes
    assert [[t.key for t in n.taints] for n in nodes] == [["dedicated"], [], ["dedicated"]]
    one_cpu = Demand.of(ReplicaRequirements.model_validate({"resources": {"requests": {"cpu": "1"}}}))
    assert max_acceptable_replicas(one_cpu, rooms(NodeInventory(cluster_id="x", nodes=nodes))) == 2


def kube_node(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    conditions = [{"type": "Ready", "status": "True"}]
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": allocatable, "conditions": conditions}}


def test_real_nodes_report_taints_cordoning_and_init_container_requests() -> None:
    taints = [{"key": "dedicated", "value": "db", "effect": "NoSchedule", "timeAdded": "2024-01-01T00:00:00Z"}]
    nodes = [kube_node("tainted", {"taints": taints}), kube_node("cordoned", {"unschedulable": True})]
    pod = {
        "spec": {
            "nodeName": "tainted",
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}],
        },
        "status": {"phase": "Running"},
    }
    tainted, cordoned = node_facts(nodes, [pod])
    assert [(t.key, t.value, t.effect) for t in tainted.taints] == [("dedicated", "db", "NoSchedule")]
    assert tainted.requested == {"cpu": "2", "memory": "64Mi", "pods": "1"}
    assert (tainted.unschedulable, cordoned.unschedulable, cordoned.taints) == (False, True, ())

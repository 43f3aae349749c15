"""The simulated cluster places pods where the predictor says they fit, and nowhere else: both
judge nodes by domain/nodefit.py (nodeSelector, required node affinity, taints), and the node
inventory the sim's agent reports counts each Description's pods, so the predictor's room and
the pods the sim runs agree replica for replica."""

from __future__ import annotations

from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.collector import LabelAggregation, StatusCollector
from clusternet_nats.api.apps import ReplicaRequirements
from clusternet_nats.api.inventory import NodeInventory
from clusternet_nats.api.meta import Taint, TaintEffect
from clusternet_nats.domain.nodefit import Demand
from clusternet_nats.domain.replicas import replica_requirements
from clusternet_nats.predictor.fit import max_acceptable_replicas, rooms

GPU = Taint(key="gpu", effect=TaintEffect.NO_SCHEDULE)


def deployment(name: str, **pod: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "apps"},
        "spec": {"replicas": 10, "template": {"spec": {"containers": [container], **pod}}},
    }


def requirements(manifest: dict[str, Any]) -> ReplicaRequirements:
    return replica_requirements(manifest["spec"]["template"]["spec"])


async def predicted(cluster: SimCluster, manifest: dict[str, Any]) -> int:
    collector = StatusCollector(cluster, 20.0, 20.0, False, LabelAggregation())
    inventory = NodeInventory(cluster_id="sim", nodes=(await collector.collect()).nodes)
    return max_acceptable_replicas(Demand.of(requirements(manifest)), rooms(inventory))


async def ready(cluster: SimCluster, manifest: dict[str, Any]) -> int:
    meta = manifest["metadata"]
    status = await cluster.observed_status(ObjectRef("apps/v1", "Deployment", meta["namespace"], meta["name"]))
    assert status is not None
    return int(status["readyReplicas"])


async def started(sizing: Sizing) -> SimCluster:
    cluster = SimCluster("agree", sizing)
    await cluster.start()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
    assert (await cluster.apply("infra", [namespace])).failures == []
    return cluster


async def test_the_sim_places_pods_where_the_predictor_says_they_fit() -> None:
    # Node 1 has an SSD, node 2 a GPU taint, node 3 neither; each has room for 4 pods of 500m.
    labels, taints = ({"disk": "ssd"}, {}, {}), ((), (GPU,), ())
    cluster = await started(Sizing(nodes=3, node_cpu="2", node_memory="4Gi", node_labels=labels, node_taints=taints))

    terms = [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    cases = [
        ("apps.on-ssd", deployment("on-ssd", nodeSelector={"disk": "ssd"}), 4),  # node 1 only
        ("apps.anywhere", deployment("anywhere"), 4),  # node 1 is full, node 2 repels: node 3
        ("apps.on-gpu", deployment("on-gpu", tolerations=[{"key": "gpu", "operator": "Exists"}]), 4),  # node 2
        ("apps.by-affinity", deployment("by-affinity", affinity=affinity), 0),  # node 1, full
    ]
    for owner, manifest, fits in cases:
        assert await predicted(cluster, manifest) == fits, manifest["metadata"]["name"]
        outcome = await cluster.apply(owner, [manifest])
        assert outcome.failures == []
        assert await ready(cluster, manifest) == fits, manifest["metadata"]["name"]

    facts = await cluster.facts()
    assert [node.pods_by_description for node in facts.nodes] == [
        {"apps.on-ssd": 4},
        {"apps.on-gpu": 4},
        {"apps.anywhere": 4},
    ]


async def test_a_bad_node_selector_is_refused_naming_the_field() -> None:
    cluster = await started(Sizing(nodes=1))
    outcome = await cluster.apply("apps.bad", [deployment("bad", nodeSelector={"disk": 1})])
    assert len(outcome.failures) == 1
    assert "spec.template.spec.nodeSelector" in outcome.failures[0], outcome.failures

"""Status reports carry Clusternet's status fields, the node inventory, and common node labels;
between changes the agent only publishes heartbeats."""

from __future__ import annotations

import uuid

import pytest
from clusternet_nats.agent.backends.base import NodeFacts
from clusternet_nats.agent.backends.sim import Sizing
from clusternet_nats.agent.backends.sim.nodes import well_known_labels
from clusternet_nats.agent.cluster_agent import StatusSettings
from clusternet_nats.agent.collector import AGENT_VERSION, LabelAggregation
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.heartbeat import ClusterHeartbeat, heartbeat_subject
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

ZONE = "node.clusternet.io/zone"
RACK = "node.clusternet.io/rack"


def node(name: str, **labels: str) -> NodeFacts:
    size = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return NodeFacts(name, True, dict(labels), size, size, {"cpu": "0", "memory": "0", "pods": "0"})


@pytest.mark.parametrize(
    ("nodes", "common"),
    [
        # 4 of 5 workers agree on the zone (80%): copied; racks differ: not copied.
        (
            [node(f"n{i}", **{ZONE: "a" if i < 4 else "b", RACK: str(i)}) for i in range(5)],
            {ZONE: "a"},
        ),
        # 3 of 5 (60%): below the threshold.
        ([node(f"n{i}", **{ZONE: "a" if i < 3 else "b"}) for i in range(5)], {}),
        # Control-plane nodes do not count; other prefixes are never copied.
        (
            [
                node("cp", **{ZONE: "x", "node-role.kubernetes.io/control-plane": ""}),
                node("w1", **{ZONE: "a", "topology.kubernetes.io/zone": "a"}),
                node("w2", **{ZONE: "a", "topology.kubernetes.io/zone": "a"}),
            ],
            {ZONE: "a"},
        ),
    ],
)
def test_labels_shared_by_80_percent_of_workers_are_aggregated(nodes: list[NodeFacts], common: dict[str, str]) -> None:
    assert LabelAggregation().common(nodes) == common


async def test_heartbeat_reports_status_inventory_and_aggregated_labels(
    nats_server: NatsServer, nc: NATS, js: JetStreamContext
) -> None:
    options = AgentOptions(
        cluster_name=f"hb{uuid.uuid4().hex[:6]}",
        report_frequency=0.5,
        sizing=Sizing(nodes=5, node_labels=({ZONE: "a"}, {ZONE: "a"}, {ZONE: "a"}, {ZONE: "a"}, {ZONE: "b"})),
        status=StatusSettings(collect_frequency=0.2),
    )
    agent = Agent(options)
    ident = agent.clusters[0].identity
    clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind("ManagedCluster"))
    statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
    inventories = StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory)
    key = clusters.key(ident.namespace, ident.name)
    async with running_service("agent", agent.build, nats_server.url):
        beats: list[ClusterHeartbeat] = []

        async def heard(msg: Msg) -> None:
            beats.append(ClusterHeartbeat.model_validate_json(msg.data))

        await nc.subscribe(heartbeat_subject(ident.namespace, ident.cluster_id), cb=heard)
        first = await eventually(lambda: statuses.get(key), 10, what="a status report")
        status = first.value
        assert status.k8s_version == "v1.30.0-sim" and status.platform == "linux/amd64"
        assert status.agent_version == AGENT_VERSION
        assert status.apiserver_url == f"sim://{ident.name}"
        assert (status.healthz, status.livez, status.readyz, status.app_pusher) == (True, True, True, False)
        assert status.heartbeat_frequency_seconds == 1
        assert status.capacity == status.allocatable == {"cpu": "20", "memory": "40Gi", "pods": "550"}
        assert status.node_statistics is not None and status.node_statistics.ready_nodes == 5
        assert status.pod_statistics is not None and status.pod_statistics.total_pods == 0
        assert status.resource_usage is not None and status.resource_usage.cpu_usage == "0"
        assert status.last_observed_time is not None and first.value.last_observed_time is not None
        ready = [c for c in status.conditions or [] if c.type == "Ready"]
        assert [(c.status, c.reason) for c in ready] == [("True", "ManagedClusterReady")]

        inventory = await eventually(lambda: inventories.get(key), 10, what="node inventory")
        assert inventory.value.cluster_id == ident.cluster_id
        assert [n.name for n in inventory.value.nodes] == [f"{ident.name}-node-{i}" for i in range(1, 6)]
        assert inventory.value.nodes[4].labels == {**well_known_labels(f"{ident.name}-node-5"), ZONE: "b"}
        assert inventory.value.nodes[0].allocatable == {"cpu": "4", "memory": "8Gi", "pods": "110"}
        assert inventory.value.nodes[0].requested == {"cpu": "0", "memory": "0", "pods": "0"}
        # Written when it changes, not on every heartbeat: a steady cluster only says it is alive.
        await eventually(lambda: len(beats) >= 3, 10, what="three heartbeats")
        steady = ClusterHeartbeat(cluster_id=ident.cluster_id, name=ident.name, status_revision=first.revision)
        assert beats[-1] == steady
        again, latest = await inventories.get(key), await statuses.get(key)
        assert again is not None and again.revision == inventory.revision
        assert latest is not None and latest.revision == first.revision

        mcls = await clusters.get(ident.namespace, ident.name)
        assert mcls is not None and mcls.labels[ZONE] == "a"

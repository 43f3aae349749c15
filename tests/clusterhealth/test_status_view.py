"""What the hub holds and shows of cluster statuses.

It caches a view of each (conditions and heartbeat times) and never writes it back; its reads
show a cluster's last heartbeat as lastObservedTime.

Cluster health and cluster init share one informer of statuses reduced to what they read
(hub/clusterconditions.py). When either writes a status (Ready Unknown, the init condition), the
whole stored status must survive: the agent's resources, versions and statistics.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from datetime import datetime

import aiohttp
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.meta import ConditionStatus
from clusternet_nats.hub.clusterhealth import ClusterHealth
from clusternet_nats.hub.clusterinit import ClusterInitController
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.js import JetStreamContext

from tests.clusterhealth.harness import Watch

CLUSTER_INIT = "ClusterInit"


async def test_health_and_init_writes_keep_what_the_agent_reported(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    built: list[ServiceContext] = []

    async def build(ctx: ServiceContext) -> None:
        ClusterHealth(ctx)
        ClusterInitController(ctx, enabled=False)
        built.append(ctx)

    cluster = AgentOptions(cluster_name=f"v{uuid.uuid4().hex[:8]}", report_frequency=1.0)
    watch = Watch(private_js, cluster)
    async with running_service("hub", build, private_nats.url):
        async with running_service("agents", Agent(cluster).build, private_nats.url):
            reported = await eventually(lambda: watch.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
        assert reported.allocatable and reported.k8s_version and reported.node_statistics
        status = await watch.ready_is(ConditionStatus.TRUE)
        assert status is not None and any(c.type == CLUSTER_INIT for c in status.conditions or []), status

        cached = next(i for i in built[0].informers if i.bucket == "managedclusters-status").get(watch.key)
        assert cached is not None and cached.allocatable is None and cached.node_statistics is None, cached

        await watch.goes_unknown_and_tainted()
        unknown = await watch.ready_is(ConditionStatus.UNKNOWN)
        assert unknown is not None
        assert (unknown.allocatable, unknown.k8s_version, unknown.node_statistics) == (
            reported.allocatable,
            reported.k8s_version,
            reported.node_statistics,
        )
        assert any(c.type == CLUSTER_INIT for c in unknown.conditions or [])


async def test_reads_show_the_last_heartbeat_as_last_observed_time(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    """A steady cluster writes no status, yet `kubectl get` shows it observed a moment ago."""
    cluster = AgentOptions(cluster_name=f"o{uuid.uuid4().hex[:8]}", report_frequency=1.0)
    watch = Watch(private_js, cluster)
    path = f"/apis/clusters.clusternet.io/v1beta1/namespaces/{watch.ident.namespace}/managedclusters"

    async def shown(session: aiohttp.ClientSession) -> list[datetime]:
        async with session.get(f"{path}/{watch.ident.name}") as one, session.get(path) as many:
            assert one.status == 200 and many.status == 200
            items = [await one.json(), *(await many.json())["items"]]
        return [datetime.fromisoformat(item["status"]["lastObservedTime"]) for item in items]

    async with (
        running_hub(private_nats.url) as hub,
        running_service("agents", Agent(cluster).build, private_nats.url),
        hub.session() as session,
    ):
        await eventually(lambda: watch.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
        await eventually(lambda: _ahead_of_store(watch, shown(session)), 10, what="GET and LIST ahead of the store")


async def _ahead_of_store(watch: Watch, times: Awaitable[list[datetime]]) -> bool:
    """Every read shows a later lastObservedTime than the status stored now (and before the reads)."""
    stored = await watch.ready_is(ConditionStatus.TRUE)
    assert stored is not None and stored.last_observed_time is not None
    found = await times
    assert len(found) == 2
    return all(t > stored.last_observed_time for t in found)


async def test_a_hub_condition_costs_no_further_writes(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    """ClusterInit adds its condition to every new cluster's status; after it, a steady cluster's
    heartbeats write nothing (the agent's report and the hub's condition are the only writes)."""

    async def build(ctx: ServiceContext) -> None:
        ClusterHealth(ctx)
        ClusterInitController(ctx, enabled=False)

    cluster = AgentOptions(cluster_name=f"c{uuid.uuid4().hex[:8]}", report_frequency=1.0)
    watch = Watch(private_js, cluster)

    async def with_init_condition() -> ManagedClusterStatus | None:
        status = await watch.ready_is(ConditionStatus.TRUE)
        return status if status and any(c.type == CLUSTER_INIT for c in status.conditions or []) else None

    async def writes() -> int:
        return int((await private_js.stream_info("KV_managedclusters-status")).state.last_seq)

    async with running_service("hub", build, private_nats.url):
        before = await writes()
        async with running_service("agents", Agent(cluster).build, private_nats.url):
            await eventually(with_init_condition, 10, what="Ready with the ClusterInit condition")

            async def two_writes() -> bool:
                return await writes() - before == 2

            await holds(two_writes, 3.0, "the agent's first report and the hub's condition, nothing after")


"""The hub caches a view of each cluster status (conditions and heartbeat times), never writes it back.

Cluster health and cluster init share one informer of statuses reduced to what they read
(hub/clusterconditions.py). When either writes a status (Ready Unknown, the init condition), the
whole stored status must survive: the agent's resources, versions and statistics.
"""

from __future__ import annotations

import uuid

from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.meta import ConditionStatus
from clusternet_nats.hub.clusterhealth import ClusterHealth
from clusternet_nats.hub.clusterinit import ClusterInitController
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
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

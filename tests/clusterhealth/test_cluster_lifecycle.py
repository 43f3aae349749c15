"""A cluster that stops heartbeating goes Unknown and tainted, and recovers when it resumes.

Real nats-server, the hub's cluster-health controller and a simulated cluster's agent reporting
every second (so Unknown comes after 3 s of silence: Clusternet's 3 x heartbeat frequency).
A private server: the controller would otherwise judge every other test's clusters too.
"""

from __future__ import annotations

import uuid

from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import ConditionStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.hub.clusterhealth import ClusterHealth
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore, list_events
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

TAINT = "clusters.clusternet.io/unschedulable"


async def build_health(ctx: ServiceContext) -> None:
    ClusterHealth(ctx)


class Watch:
    """Reads one cluster's ManagedCluster and status as the hub stores them."""

    def __init__(self, js: JetStreamContext, options: AgentOptions) -> None:
        self.ident = options.identities()[0]
        self.clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind("ManagedCluster"))
        self.statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
        self.key = self.clusters.key(self.ident.namespace, self.ident.name)

    async def ready_is(self, want: ConditionStatus) -> ManagedClusterStatus | None:
        found = await self.statuses.get(self.key)
        conditions = (found.value.conditions or []) if found else []
        return found.value if any(c.type == "Ready" and c.status is want for c in conditions) else None

    async def tainted(self) -> bool:
        found = await self.clusters.get(self.ident.namespace, self.ident.name)
        return found is not None and any(t.key == TAINT and t.effect == "NoSchedule" for t in found.spec.taints or [])

    async def untainted(self) -> bool:
        return not await self.tainted()

    async def goes_unknown_and_tainted(self) -> None:
        status = await eventually(lambda: self.ready_is(ConditionStatus.UNKNOWN), 15, what="Ready Unknown")
        assert (status.healthz, status.livez, status.readyz) == (False, False, False)
        ready = next(c for c in status.conditions or [] if c.type == "Ready")
        assert ready.reason == "ClusterStatusUnknown"
        await eventually(self.tainted, 10, what="unschedulable taint")

    async def recovers(self) -> None:
        await eventually(lambda: self.ready_is(ConditionStatus.TRUE), 10, what="Ready True again")
        await eventually(self.untainted, 10, what="taint removed")


async def test_silent_cluster_becomes_unknown_and_tainted_then_recovers(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    options = AgentOptions(cluster_name=f"h{uuid.uuid4().hex[:8]}", report_frequency=1.0)
    watch = Watch(private_js, options)
    async with running_service("hub", build_health, private_nats.url):
        async with running_service("agent", Agent(options).build, private_nats.url):
            await eventually(lambda: watch.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
            assert await watch.untainted()
        # The agent is gone: after 3 missed heartbeats the hub declares it Unknown.
        await watch.goes_unknown_and_tainted()
        async with running_service("agent", Agent(options).build, private_nats.url):
            await watch.recovers()
    events = await list_events(private_js, "ManagedCluster", watch.ident.namespace, watch.ident.name)
    assert [(e.type, e.reason) for e in events] == [("Warning", "ClusterNotReady"), ("Normal", "ClusterReady")]


async def test_a_cut_off_agent_is_tainted_and_recovers_when_its_link_returns(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    """The agent keeps running; its next heartbeat after the cut builds on the hub's Unknown."""
    options = AgentOptions(cluster_name=f"l{uuid.uuid4().hex[:8]}", report_frequency=1.0)
    watch = Watch(private_js, options)
    link = TcpLink("127.0.0.1", private_nats.port)
    async with (
        running_service("hub", build_health, private_nats.url),
        link,
        running_service("agent", Agent(options).build, link.url),
    ):
        await eventually(lambda: watch.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
        await link.cut()
        await watch.goes_unknown_and_tainted()
        await link.restore()
        await watch.recovers()

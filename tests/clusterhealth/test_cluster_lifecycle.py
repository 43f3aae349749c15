"""A cluster that stops heartbeating goes Unknown and tainted, and recovers when it resumes.

Real nats-server, the hub's cluster-health controller and a simulated cluster's agent reporting
every second (so Unknown comes after 3 s of silence: Clusternet's 3 x heartbeat frequency).
A private server: the controller would otherwise judge every other test's clusters too. Between
status changes the agent only publishes heartbeats (api/heartbeat.py); after the cut the hub
answers the first one, since it marked the cluster Unknown, and the agent writes Ready again.
"""

from __future__ import annotations

import uuid

from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.meta import ConditionStatus
from clusternet_nats.store import list_events
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

from tests.clusterhealth.harness import Watch, build_health


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

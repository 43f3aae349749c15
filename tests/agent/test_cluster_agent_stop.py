"""A cluster's stop goes on past a step that hangs: what comes after it (its NATS connection, its
leaf node) is still stopped, instead of the whole stop waiting for good."""

from __future__ import annotations

import asyncio
import uuid

from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.runtime.service import STOP_TIMEOUT, CommonOptions
from clusternet_nats.store import ensure_buckets
from clusternet_nats.store.buckets import StoreLayout
from clusternet_nats.testing.natsserver import NatsServer
from nats.js import JetStreamContext


class NeverClosing(SimCluster):
    async def close(self) -> None:
        await asyncio.Event().wait()


async def test_a_backend_that_never_closes_does_not_keep_the_connection_open(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    await ensure_buckets(private_js, StoreLayout())
    name = f"c{uuid.uuid4().hex[:6]}"
    agent = ClusterAgent(single_cluster(name, None, {}, ClusterSyncMode.PULL), NeverClosing(name, Sizing()), 1.0)
    await agent.start(CommonOptions(nats_url=private_nats.url, health_port=-1))
    assert agent.ctx is not None
    nc = agent.ctx.nc
    await asyncio.wait_for(agent.stop(), STOP_TIMEOUT + 10)
    assert nc.is_closed

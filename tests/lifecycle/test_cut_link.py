"""A Subscription deleted while its child is cut off (the child's TCP link to the hub cut, a
network partition: testing/tcplink.py) stays, held by its finalizer, until the child is back
and has pruned; the child keeps its objects meanwhile, as a cut-off child keeps what it has."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

import pytest
from clusternet_nats.agent.backends.sim import SimCluster
from clusternet_nats.agent.cluster_agent import StatusSettings
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api import Description, Subscription, by_kind
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.domain.finalizers import APP_FINALIZER
from clusternet_nats.store import JsonBucket, ObjectStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually, holds
from nats.js import JetStreamContext

from ..agent.test_disconnected_convergence import HUB_SIDE, NS, StoreWriter, child_config_maps


@pytest.mark.parametrize("mode", [ClusterSyncMode.PULL, ClusterSyncMode.PUSH], ids=["pull", "push"])
async def test_deletion_waits_for_a_child_cut_off_and_ends_when_it_has_pruned(
    private_nats: NatsServer, private_js: JetStreamContext, tmp_path: Path, mode: ClusterSyncMode
) -> None:
    """Pull: the agent prunes once it lists again; Push (the hub deploys): the pusher's prune when
    the cluster is back removes it and deletes the statuses of what it pruned."""
    hub = StoreWriter(private_js)
    subscriptions: ObjectStore[Subscription] = ObjectStore(private_js, by_kind(Subscription.KIND))
    options = AgentOptions(
        cluster_name=f"c{uuid.uuid4().hex[:6]}",
        report_frequency=1.0,
        state_dir=tmp_path,
        sync_mode=mode,
        status=StatusSettings(app_pusher=mode is ClusterSyncMode.PUSH),
    )
    cluster = options.identities()[0].name
    agent = Agent(options)

    def maps() -> set[str]:
        backend = agent.clusters[0].backend
        assert isinstance(backend, SimCluster)
        return set(child_config_maps(backend))

    async with contextlib.AsyncExitStack() as stack:
        for name, build in HUB_SIDE:
            await stack.enter_async_context(running_service(name, build, private_nats.url))
        link = await stack.enter_async_context(TcpLink("127.0.0.1", private_nats.port))
        await stack.enter_async_context(running_service("clusternet-agent", agent.build, link.url))
        await hub.publish("a", "1", cluster)
        await eventually(lambda: maps() == {"a"}, 30, what="the ConfigMap in the child")

        async def finalized() -> Subscription | None:
            sub = await subscriptions.get(NS, "a")
            return sub if sub is not None and APP_FINALIZER in (sub.metadata.finalizers or []) else None

        await eventually(finalized, 20, what="the Subscription's finalizer")
        statuses = by_kind(Description.KIND).status_bucket or ""

        async def reported() -> bool:  # the child has told what it holds (what the deletion waits on)
            return bool(await JsonBucket(private_js, statuses).keys(f"{agent.clusters[0].identity.namespace}.>"))

        await eventually(reported, 20, what="the child's Description status")

        await link.cut()
        held = await subscriptions.delete_object(NS, "a")
        assert held is not None and held.metadata.deletion_timestamp is not None

        async def still_held() -> bool:
            sub = await subscriptions.get(NS, "a")
            return sub is not None and sub.metadata.deletion_timestamp is not None

        await holds(still_held, 3, what="the Subscription held while its child is cut off")
        assert maps() == {"a"}, "a cut-off child keeps what it has"

        await link.restore()
        await eventually(lambda: maps() == set(), 60, what="the child pruned once back")
        await eventually(lambda: _gone(subscriptions), 60, what="the Subscription gone once the child is clean")


async def _gone(subscriptions: ObjectStore[Subscription]) -> bool:
    return await subscriptions.get(NS, "a") is None

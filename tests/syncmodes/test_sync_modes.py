"""Push, Pull and Dual with Clusternet's rules for who deploys a Description.

Real nats-server, the deployer (whose pusher is the hub side of Push) and four simulated
clusters: Pull and Dual without AppPusher deploy themselves; Push and Dual with AppPusher are
deployed by the hub through their apply subject. Who deployed shows in the Events' component.
"""

from __future__ import annotations

import contextlib
import json
import uuid

import pytest
from clusternet_nats.agent.backends.sim import SimCluster
from clusternet_nats.agent.cluster_agent import StatusSettings
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.apps import DeployerType, Description, DescriptionPhase, DescriptionSpec, DescriptionStatus
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.push import deployable_by_agent, deployable_by_hub
from clusternet_nats.api.registry import by_kind
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.store import ObjectStore, StatusStore, list_events
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}, "spec": {}}

# (sync mode, AppPusher, who deploys)
MODES = [
    (ClusterSyncMode.PULL, False, "clusternet-agent"),
    (ClusterSyncMode.DUAL, False, "clusternet-agent"),
    (ClusterSyncMode.DUAL, True, "clusternet-deployer"),
    (ClusterSyncMode.PUSH, True, "clusternet-deployer"),
]


@pytest.mark.parametrize(
    ("mode", "app_pusher", "agent", "hub"),
    [
        (ClusterSyncMode.PULL, False, True, False),
        (ClusterSyncMode.PULL, True, True, False),
        (ClusterSyncMode.DUAL, False, True, False),
        (ClusterSyncMode.DUAL, True, False, True),
        (ClusterSyncMode.PUSH, True, False, True),
        (ClusterSyncMode.PUSH, False, False, False),
    ],
)
def test_clusternet_rules_for_who_deploys(mode: ClusterSyncMode, app_pusher: bool, agent: bool, hub: bool) -> None:
    assert deployable_by_agent(mode, app_pusher) is agent
    assert deployable_by_hub(mode, app_pusher) is hub


def test_push_without_app_pusher_is_refused_as_clusternet_does() -> None:
    with pytest.raises(ValueError, match="--app-pusher"):
        AgentOptions(cluster_name="x", sync_mode=ClusterSyncMode.PUSH).identities()


async def test_each_mode_is_deployed_by_the_side_clusternet_says(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    agents = [
        Agent(
            AgentOptions(
                cluster_name=f"{mode.value.lower()}{int(pusher)}-{uuid.uuid4().hex[:6]}",
                sync_mode=mode,
                report_frequency=5.0,
                status=StatusSettings(app_pusher=pusher),
            )
        )
        for mode, pusher, _ in MODES
    ]
    descriptions: ObjectStore[Description] = ObjectStore(private_js, by_kind("Description"))
    statuses = StatusStore(private_js, "descriptions-status", DescriptionStatus)
    raw = [json.dumps(obj).encode() for obj in (NAMESPACE, SERVICE)]
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(running_service("clusternet-deployer", build_deployer, private_nats.url))
        for agent in agents:
            await stack.enter_async_context(running_service("agent", agent.build, private_nats.url))
        keys = []
        for agent in agents:
            ident = agent.clusters[0].identity
            desc = Description.new(
                "shop-generic", ident.namespace, spec=DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw)
            )
            await descriptions.create(desc)
            keys.append(descriptions.key_of(desc))

        for agent, key, (mode, _, deployer) in zip(agents, keys, MODES, strict=True):
            sim = agent.clusters[0].backend
            assert isinstance(sim, SimCluster)

            async def success(k: str = key) -> bool:
                found = await statuses.get(k)
                return found is not None and found.value.phase is DescriptionPhase.SUCCESS

            await eventually(success, 15, what=f"{mode} Description Success")
            assert await sim.owners() == {key}
            namespace, name = key.split(".", 1)
            events = await list_events(private_js, "Description", namespace, name)
            assert [(e.reason, e.source.component if e.source else None) for e in events] == [
                ("SuccessfullyDeployed", deployer)
            ], mode

        # Deleting a pushed Description removes its objects from the child, and its status.
        push_agent, push_key = agents[3], keys[3]
        sim = push_agent.clusters[0].backend
        assert isinstance(sim, SimCluster)
        namespace, name = push_key.split(".", 1)
        assert await descriptions.delete(namespace, name)

        async def pruned() -> bool:
            return await sim.owners() == set() and await statuses.get(push_key) is None

        await eventually(pruned, 15, what="pushed Description removed")


async def test_what_was_deleted_while_the_hub_side_was_down_is_pruned_on_its_return(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    agent = Agent(
        AgentOptions(
            cluster_name=f"push-{uuid.uuid4().hex[:6]}",
            sync_mode=ClusterSyncMode.PUSH,
            report_frequency=5.0,
            status=StatusSettings(app_pusher=True),
        )
    )
    sim = agent.clusters[0].backend
    assert isinstance(sim, SimCluster)
    namespace = agent.clusters[0].identity.namespace
    descriptions: ObjectStore[Description] = ObjectStore(private_js, by_kind("Description"))
    keys = []
    for name in ("gone", "kept"):
        raw = [json.dumps({**NAMESPACE, "metadata": {"name": name}}).encode()]
        desc = Description.new(name, namespace, spec=DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw))
        keys.append(descriptions.key_of(await descriptions.create(desc)))

    async def owners_are(want: set[str]) -> bool:
        return await sim.owners() == want

    async with running_service("agent", agent.build, private_nats.url):
        async with running_service("clusternet-deployer", build_deployer, private_nats.url):
            await eventually(lambda: owners_are(set(keys)), 15, what="both pushed")
        assert await descriptions.delete(namespace, "gone")  # nobody on the hub side to see it
        async with running_service("clusternet-deployer", build_deployer, private_nats.url):
            await eventually(lambda: owners_are({keys[1]}), 15, what="orphan pruned")


async def test_a_pushed_cluster_cut_off_briefly_converges_when_its_link_returns(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    options = AgentOptions(
        cluster_name=f"cut-{uuid.uuid4().hex[:6]}",
        sync_mode=ClusterSyncMode.PUSH,
        report_frequency=1.0,
        status=StatusSettings(app_pusher=True),
    )
    agent = Agent(options)
    sim = agent.clusters[0].backend
    assert isinstance(sim, SimCluster)
    namespace = agent.clusters[0].identity.namespace
    descriptions: ObjectStore[Description] = ObjectStore(private_js, by_kind("Description"))

    def generic(name: str) -> Description:
        raw = [json.dumps({**NAMESPACE, "metadata": {"name": name}}).encode()]
        return Description.new(name, namespace, spec=DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw))

    async def owners_are(*names: str) -> bool:
        return await sim.owners() == {f"{namespace}.{n}" for n in names}

    link = TcpLink("127.0.0.1", private_nats.port)
    async with (
        running_service("clusternet-deployer", build_deployer, private_nats.url),
        link,
        running_service("agent", agent.build, link.url),
    ):
        await descriptions.create(generic("first"))
        await eventually(lambda: owners_are("first"), 15, what="first pushed")
        await link.cut()
        await eventually(lambda: not agent.clusters[0].ctx.nc.is_connected, 5, what="agent sees the cut")  # type: ignore[union-attr]
        await descriptions.delete(namespace, "first")
        await descriptions.create(generic("second"))
        await link.restore()
        await eventually(lambda: owners_are("second"), 30, what="converged after the cut")

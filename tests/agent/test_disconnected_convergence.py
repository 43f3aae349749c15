"""A child cut off from the hub converges on exactly the desired state once its link is back.

A real nats-server, with scheduler and deployer beside it; the agent reaches it only through a
TCP link the test cuts (testing/tcplink.py: a network partition, every byte still real NATS).
While the link is down, one Subscription is deleted, one's feed changes and one is added; after
it is restored the child holds exactly the three desired ConfigMaps, and the one that never
changed was never deleted and recreated (same uid): nothing was pruned on a partial view. The
same holds when the agent is restarted (from its state file) while the link is still down, and
when the link cut is a leaf node's: the registered agent's own leaf dials the secured hub's TLS
leaf port through the relay, so the agent's connection (to its leaf) never drops.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.agent.registration import Enrollment, RegistrationSettings
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api import labels as known
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.registry import by_kind
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.hub.registration.testing import secured_hub
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.scheduler.service import build as build_scheduler
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

NS = "default"
"""Present in every child, so a Subscription of a ConfigMap needs nothing else."""


HUB_SIDE = (("clusternet-scheduler", build_scheduler), ("clusternet-deployer", build_deployer))


def config_map(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": {"v": value}}


def subscription(name: str, cluster: str) -> KubeObject:
    return parse_object(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "subscribers": [{"clusterAffinity": {"matchLabels": {known.CLUSTER_NAME: cluster}}}],
                "feeds": [{"apiVersion": "v1", "kind": "ConfigMap", "name": name, "namespace": NS}],
            },
        }
    )


class StoreWriter:
    def __init__(self, js: JetStreamContext) -> None:
        self.js = js

    async def apply(self, obj: KubeObject) -> None:
        await ObjectStore(self.js, by_kind(obj.kind)).apply(obj)

    async def delete(self, obj: KubeObject) -> None:
        await ObjectStore(self.js, by_kind(obj.kind)).delete(obj.metadata.namespace, obj.name)

    async def publish(self, name: str, value: str, cluster: str) -> None:
        """What `cnet apply` of a ConfigMap and a Subscription feeding it to `cluster` stores."""
        await self.apply(parse_object(config_map(name, value)))
        await self.apply(subscription(name, cluster))


def child_config_maps(sim: SimCluster) -> dict[str, tuple[str, str]]:
    """name -> (data.v, uid) of the ConfigMaps in the child's namespace."""
    return {
        o.ref.name: (o.body["data"]["v"], o.body["metadata"]["uid"])
        for o in sim.objects
        if o.ref.kind == "ConfigMap" and o.ref.namespace == NS
    }


async def publish_three(hub: StoreWriter, cluster: str, sim: Callable[[], SimCluster]) -> str:
    """a, b and c delivered to the child; returns the uid of c, the one that will never change."""
    for name in ("a", "b", "c"):
        await hub.publish(name, "1", cluster)
    await eventually(lambda: holds(sim(), {"a": "1", "b": "1", "c": "1"}), 20, what="three ConfigMaps in the child")
    return child_config_maps(sim())["c"][1]


async def change_while_cut(hub: StoreWriter, cluster: str, namespace: str) -> None:
    """Deletes a, changes b, adds d, and waits until the hub has rendered that for the child."""
    await hub.delete(subscription("a", cluster))
    await hub.publish("b", "2", cluster)
    await hub.publish("d", "1", cluster)
    descriptions = ObjectStore(hub.js, by_kind("Description"))

    async def hub_side_done() -> bool:
        raws = [d.spec.raw or [] for d in await descriptions.list(namespace)]
        names = sorted(json.loads(raw[0])["metadata"]["name"] + json.loads(raw[0])["data"]["v"] for raw in raws)
        return names == ["b2", "c1", "d1"]

    await eventually(hub_side_done, 20, what="the hub rendered the new desired state")


async def converged(sim: Callable[[], SimCluster], uid_c: str) -> None:
    await eventually(lambda: holds(sim(), {"b": "2", "c": "1", "d": "1"}), 30, what="child converged")
    assert child_config_maps(sim())["c"][1] == uid_c, "an unchanged object must never be deleted and recreated"
    assert sim().objects.get(ObjectRef("v1", "ConfigMap", NS, "a")) is None


def holds(sim: SimCluster, want: dict[str, str]) -> bool:
    return {k: v for k, (v, _) in child_config_maps(sim).items()} == want


@pytest.mark.parametrize("restarted_while_cut", [False, True], ids=["running", "restarted-while-cut"])
async def test_a_cut_off_child_converges_and_prunes_nothing_by_mistake(
    private_nats: NatsServer, private_js: JetStreamContext, tmp_path: Path, restarted_while_cut: bool
) -> None:
    hub = StoreWriter(private_js)
    options = AgentOptions(cluster_name=f"c{uuid.uuid4().hex[:6]}", report_frequency=1.0, state_dir=tmp_path)
    cluster = options.identities()[0].name
    agent = Agent(options)

    def sim() -> SimCluster:
        backend = agent.clusters[0].backend
        assert isinstance(backend, SimCluster)
        return backend

    async with contextlib.AsyncExitStack() as stack:
        for name, build in HUB_SIDE:
            await stack.enter_async_context(running_service(name, build, private_nats.url))
        link = await stack.enter_async_context(TcpLink("127.0.0.1", private_nats.port))
        child = await stack.enter_async_context(contextlib.AsyncExitStack())
        await child.enter_async_context(running_service("clusternet-agent", agent.build, link.url))
        uid_c = await publish_three(hub, cluster, sim)

        await link.cut()  # the child's only link to the hub is gone
        if restarted_while_cut:
            await child.aclose()  # the agent stops, keeping the child's objects in its state file
            stopped = agent.clusters[0].ctx
            assert stopped is not None and stopped.nc.is_closed, "the stopped agent left its connection dialling"
        await change_while_cut(hub, cluster, agent.clusters[0].identity.namespace)
        if restarted_while_cut:
            agent = Agent(options)  # comes back while still cut off: it must not prune on what it cannot see
            await stack.enter_async_context(running_service("clusternet-agent", agent.build, link.url))
        else:
            assert holds(sim(), {"a": "1", "b": "1", "c": "1"}), "a cut-off child keeps what it has"

        await link.restore()
        await converged(sim, uid_c)


async def test_a_child_cut_off_at_its_leaf_link_converges(tmp_path: Path) -> None:
    """The same over the real tunnel: the agent's own leaf node dials the hub's TLS leaf port
    through the link; the agent's connection to its local leaf stays up while the leaf's is cut."""
    name = f"leaf{uuid.uuid4().hex[:6]}"
    async with contextlib.AsyncExitStack() as stack:
        secured = await stack.enter_async_context(secured_hub(tmp_path))
        hub = StoreWriter(secured.nc.jetstream())
        for service, build in HUB_SIDE:
            await stack.enter_async_context(running_service(service, build, secured.secure.url("hub")))
        link = await stack.enter_async_context(TcpLink("127.0.0.1", secured.secure.leaf_port))
        settings = RegistrationSettings(
            await secured.token(),
            tmp_path / "state",
            hub_leaf_url=f"tls://127.0.0.1:{link.port}",
            hub_ca=secured.secure.pki.ca_cert,
        )
        identity = single_cluster(name, None, {}, ClusterSyncMode.PULL)
        backend = SimCluster(name, Sizing())
        agent = ClusterAgent(identity, backend, 1.0, enrollment=Enrollment(settings, identity))
        stack.push_async_callback(agent.stop)
        await agent.start(CommonOptions(nats_url="nats://127.0.0.1:1", health_port=-1, jetstream_domain="hub"))
        uid_c = await publish_three(hub, name, lambda: backend)

        await link.cut()  # the leaf's only link to the hub is gone
        await change_while_cut(hub, name, identity.namespace)
        assert holds(backend, {"a": "1", "b": "1", "c": "1"}), "a cut-off child keeps what it has"

        await link.restore()
        await converged(lambda: backend, uid_c)

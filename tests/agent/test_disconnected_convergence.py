"""A child cut off from the hub converges on exactly the desired state once its link is back.

A real nats-server, with scheduler and deployer beside it; the agent reaches it only through a
TCP link the test cuts (testing/tcplink.py: a network partition, every byte still real NATS).
While the link is down, one Subscription is deleted, one's feed changes and one is added; after
it is restored the child holds exactly the three desired ConfigMaps, and the one that never
changed was never deleted and recreated (same uid): nothing was pruned on a partial view. The
same holds when the agent is restarted (from its state file) while the link is still down.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api import labels as known
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.registry import by_kind
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.scheduler.service import build as build_scheduler
from clusternet_nats.store import ObjectStore, ensure_buckets
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

NS = "default"
"""Present in every child, so a Subscription of a ConfigMap needs nothing else."""


@pytest.fixture
async def hub_js(private_nats: NatsServer) -> AsyncIterator[JetStreamContext]:
    conn = Connection(private_nats.url, "pytest")
    js = (await conn.connect()).jetstream()
    await ensure_buckets(js)
    yield js
    await conn.close()


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


class Hub:
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


@pytest.mark.parametrize("restarted_while_cut", [False, True], ids=["running", "restarted-while-cut"])
async def test_a_cut_off_child_converges_and_prunes_nothing_by_mistake(
    private_nats: NatsServer, hub_js: JetStreamContext, tmp_path: Path, restarted_while_cut: bool
) -> None:
    hub = Hub(hub_js)
    options = AgentOptions(cluster_name=f"c{uuid.uuid4().hex[:6]}", report_frequency=1.0, state_dir=tmp_path)
    cluster = options.identities()[0].name
    agent = Agent(options)

    def sim() -> SimCluster:
        backend = agent.clusters[0].backend
        assert isinstance(backend, SimCluster)
        return backend

    def holds(want: dict[str, str]) -> bool:
        return {k: v for k, (v, _) in child_config_maps(sim()).items()} == want

    async with contextlib.AsyncExitStack() as stack:
        for name, build in (("clusternet-scheduler", build_scheduler), ("clusternet-deployer", build_deployer)):
            await stack.enter_async_context(running_service(name, build, private_nats.url))
        link = await stack.enter_async_context(TcpLink("127.0.0.1", private_nats.port))
        child = await stack.enter_async_context(contextlib.AsyncExitStack())
        await child.enter_async_context(running_service("clusternet-agent", agent.build, link.url))
        for name in ("a", "b", "c"):
            await hub.publish(name, "1", cluster)
        await eventually(lambda: holds({"a": "1", "b": "1", "c": "1"}), 20, what="three ConfigMaps in the child")
        uid_c = child_config_maps(sim())["c"][1]

        await link.cut()  # the child's only link to the hub is gone
        if restarted_while_cut:
            await child.aclose()  # the agent stops, keeping the child's objects in its state file
        await hub.delete(subscription("a", cluster))
        await hub.publish("b", "2", cluster)
        await hub.publish("d", "1", cluster)
        descriptions = ObjectStore(hub_js, by_kind("Description"))

        async def hub_side_done() -> bool:
            raws = [d.spec.raw or [] for d in await descriptions.list(agent.clusters[0].identity.namespace)]
            names = sorted(json.loads(raw[0])["metadata"]["name"] + json.loads(raw[0])["data"]["v"] for raw in raws)
            return names == ["b2", "c1", "d1"]

        await eventually(hub_side_done, 20, what="the hub rendered the new desired state")
        if restarted_while_cut:
            agent = Agent(options)  # comes back while still cut off: it must not prune on what it cannot see
            await stack.enter_async_context(running_service("clusternet-agent", agent.build, link.url))
        else:
            assert holds({"a": "1", "b": "1", "c": "1"}), "a cut-off child keeps what it has"

        await link.restore()
        await eventually(lambda: holds({"b": "2", "c": "1", "d": "1"}), 30, what="child converged")
        assert child_config_maps(sim())["c"][1] == uid_c, "an unchanged object must never be deleted and recreated"
        assert sim().objects.get(ObjectRef("v1", "ConfigMap", NS, "a")) is None

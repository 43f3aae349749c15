"""A feed deleted with kubectl on a real parent apiserver behaves as one deleted through the hub.

Real parts: the parent kube-apiserver (our CRDs installed), one nats-server, and the bridge,
scheduler, deployer and an agent of two simulated clusters, in this process. By default the
deleted feed leaves the parent's Subscription (the bridge takes it out there, where it
publishes Subscriptions from) and its objects leave the children; with FeedInUseProtection the
feed's Manifest on NATS is held, its annotation naming the Subscription, the children keep its
objects, and the parent's Subscription, once deleted, stays Terminating until every child is
clean, after which the feed goes too.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from clusternet_nats.agent.backends.sim.persistence import saved_states
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api import Manifest, by_kind
from clusternet_nats.bridge.service import builder
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.scheduler.service import build as build_scheduler
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.js import JetStreamContext

from tests.bridge.conftest import Parent

PROTECTION = "apps.clusternet.io/feed-protection"


def app(ns: str, suffix: str, maps: tuple[str, ...]) -> str:
    docs = [f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"]
    docs += [
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {m}, namespace: {ns}}}\ndata: {{k: {m}}}\n" for m in maps
    ]
    feeds = [f"{{apiVersion: v1, kind: Namespace, name: {ns}}}"]
    feeds += [f"{{apiVersion: v1, kind: ConfigMap, name: {m}, namespace: {ns}}}" for m in maps]
    docs.append(
        "apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\n"
        f"metadata: {{name: app, namespace: {ns}}}\n"
        f'spec:\n  subscribers: [{{clusterAffinity: {{matchLabels: {{lc: "{suffix}"}}}}}}]\n'
        f"  feeds: [{', '.join(feeds)}]\n"
    )
    return "---\n".join(docs)


class Children:
    """The simulated clusters' objects, read from the agent's state files."""

    def __init__(self, state_dir: Path, names: list[str]) -> None:
        self.state_dir, self.names = state_dir, names

    def maps(self, cluster: str, ns: str) -> set[str]:
        state = saved_states(self.state_dir).get(cluster)
        if state is None:
            return set()
        return {o["ref"][3] for o in state["objects"] if o["ref"][1] == "ConfigMap" and o["ref"][2] == ns}

    async def hold(self, ns: str, maps: set[str]) -> None:
        for name in self.names:
            await eventually(lambda n=name: self.maps(n, ns) == maps, 60, what=f"exactly {sorted(maps)} in {name}")


@contextlib.asynccontextmanager
async def bridged(
    parent: Parent, nats_server: NatsServer, tmp_path: Path, protection: bool
) -> AsyncIterator[tuple[str, str, Children]]:
    suffix = uuid.uuid4().hex[:8]
    agent = Agent(
        AgentOptions(cluster_name=f"lc-{suffix}", sim_clusters=2, cluster_labels={"lc": suffix}, state_dir=tmp_path)
    )
    deployer = functools.partial(build_deployer, feed_in_use_protection=protection)
    async with contextlib.AsyncExitStack() as stack:
        for name, build in [
            ("bridge", builder(parent.plane.kubeconfig)),
            ("scheduler", build_scheduler),
            ("deployer", deployer),
            ("agent", agent.build),
        ]:
            await stack.enter_async_context(running_service(name, build, nats_server.url))
        yield f"lc-{suffix}", suffix, Children(tmp_path, [f"lc-{suffix}-1", f"lc-{suffix}-2"])


async def parent_feeds(parent: Parent, ns: str) -> list[str]:
    sub = await parent.get("subs", "app", "-n", ns)
    return [f["name"] for f in (sub or {}).get("spec", {}).get("feeds", [])]


async def test_a_feed_deleted_on_the_parent_leaves_the_subscription_and_the_children(
    parent: Parent, nats_server: NatsServer, js: JetStreamContext, tmp_path: Path
) -> None:
    manifests: ObjectStore[Manifest] = ObjectStore(js, by_kind(Manifest.KIND))
    async with bridged(parent, nats_server, tmp_path, protection=False) as (ns, suffix, children):
        await parent.apply(app(ns, suffix, ("keep", "drop")))
        await children.hold(ns, {"keep", "drop"})

        await parent.kubectl("delete", "configmap", "drop", "-n", ns)

        async def left() -> bool:
            return await parent_feeds(parent, ns) == [ns, "keep"]

        await eventually(left, 60, what="drop taken out of the parent's Subscription")
        await children.hold(ns, {"keep"})
        assert await manifests.get("clusternet-reserved", f"configmaps.{ns}.drop") is None
        await parent.kubectl("delete", "subs", "app", "-n", ns, "--timeout=60s")
        await children.hold(ns, set())


async def test_feed_in_use_protection_through_the_bridge(
    parent: Parent, nats_server: NatsServer, js: JetStreamContext, tmp_path: Path
) -> None:
    manifests: ObjectStore[Manifest] = ObjectStore(js, by_kind(Manifest.KIND))
    async with bridged(parent, nats_server, tmp_path, protection=True) as (ns, suffix, children):
        await parent.apply(app(ns, suffix, ("guarded",)))
        await children.hold(ns, {"guarded"})
        name = f"configmaps.{ns}.guarded"

        async def protected() -> Manifest | None:
            found = await manifests.get("clusternet-reserved", name)
            return found if found and PROTECTION in (found.metadata.finalizers or []) else None

        await eventually(protected, 30, what="the feed-protection finalizer on the Manifest")
        await parent.kubectl("delete", "configmap", "guarded", "-n", ns)

        async def blocked() -> str | None:
            found = await manifests.get("clusternet-reserved", name)
            return None if found is None else (found.metadata.annotations or {}).get(PROTECTION)

        message = await eventually(blocked, 30, what="the feed-protection annotation")
        assert f"(including {ns}/app)" in message
        await holds(lambda: all("guarded" in children.maps(c, ns) for c in children.names), 3, what="kept")
        assert await parent_feeds(parent, ns) == [ns, "guarded"]

        await parent.kubectl("delete", "subs", "app", "-n", ns, "--wait=false")
        sub: dict[str, Any] | None = await parent.get("subs", "app", "-n", ns)
        assert sub is None or sub["metadata"].get("deletionTimestamp")  # Terminating on the parent meanwhile
        await children.hold(ns, set())
        await eventually(lambda: _none(parent.get("subs", "app", "-n", ns)), 60, what="the parent's Subscription gone")
        await eventually(lambda: _none(manifests.get("clusternet-reserved", name)), 30, what="the feed released")


async def _none(pending: Any) -> bool:
    return await pending is None



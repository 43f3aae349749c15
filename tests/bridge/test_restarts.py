"""The bridge restarted, and NATS restarted under it: it catches up on what changed while it was
away, and republishes nothing that did not change."""

from __future__ import annotations

import asyncio

import nats
from clusternet_nats.api import Subscription, by_kind
from clusternet_nats.bridge.service import builder
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import ObjectStore, ensure_buckets, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.msg import Msg

from tests.bridge.conftest import Parent

SUBSCRIPTION = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {{name: app, namespace: {namespace}}}
spec:
  subscribers: [{{clusterAffinity: {{matchLabels: {{env: test}}}}}}]
  feeds: [{{apiVersion: v1, kind: Namespace, name: {namespace}}}]
"""


async def _label(subs: ObjectStore[Subscription], namespace: str, value: str) -> bool:
    found = await subs.get(namespace, "app")
    return found is not None and found.labels.get("tier") == value


async def test_restarts_of_bridge_and_nats(parent: Parent, private_nats: NatsServer, unique_ns: str) -> None:
    nc = await nats.connect(private_nats.url, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    js = nc.jetstream()
    await ensure_buckets(js)
    subs: ObjectStore[Subscription] = ObjectStore(js, by_kind(Subscription.KIND))
    build = builder(parent.plane.kubeconfig)
    published: list[Msg] = []

    async def record(msg: Msg) -> None:
        published.append(msg)

    try:
        await parent.kubectl("create", "namespace", unique_ns)
        async with running_service("clusternet-bridge", build, private_nats.url):
            await parent.apply(SUBSCRIPTION.format(namespace=unique_ns))
            await eventually(lambda: subs.get(unique_ns, "app"), timeout=20, what="published")
        await nc.subscribe(f"$KV.subscriptions.{object_key(unique_ns, 'app')}", cb=record)

        # Changed while the bridge was down: published once it is back, and nothing else is.
        await parent.kubectl("label", "subs", "app", "-n", unique_ns, "tier=one")
        async with running_service("clusternet-bridge", build, private_nats.url):
            await eventually(lambda: _label(subs, unique_ns, "one"), timeout=20, what="caught up")
            await barrier(nc)
            assert len(published) == 1

            # NATS restarts under the running bridge; a change after it still arrives.
            await asyncio.to_thread(private_nats.restart)
            await parent.kubectl("label", "--overwrite", "subs", "app", "-n", unique_ns, "tier=two")
            await eventually(lambda: _label(subs, unique_ns, "two"), timeout=30, what="published after NATS restart")

            await parent.kubectl("delete", "subs", "app", "-n", unique_ns, "--timeout=30s")
            assert await subs.get(unique_ns, "app") is None
    finally:
        await nc.close()

"""The whole capacity chain in-process on a private nats-server: Manifests -> the hub's
FeedInventory controller -> the scheduler's dynamic dividing asking the predictor. Two
Subscriptions divided one after the other share a cluster's room: the second sees the replicas
bound to the first (not running yet) as taken, so the cluster is not overcommitted."""

from __future__ import annotations

from typing import Any

from clusternet_nats.api.apps import Manifest
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.hub.feedinventory import FeedInventoryController
from clusternet_nats.predictor.service import build as build_predictor
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.scheduler.service import build as build_scheduler
from clusternet_nats.store import ObjectStore, StatusStore, ensure_buckets, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS

from tests.scheduler.conftest import build_cluster, build_subscription
from tests.scheduler.test_scheduler_service import Stores, selecting

NS = "shop"
DYNAMIC = {"schedulingStrategy": "Dividing", "dividingScheduling": {"type": "Dynamic", "dynamicDividing": {}}}


async def build_feed_inventories(ctx: ServiceContext) -> None:
    FeedInventoryController(ctx)


def deployment(name: str, replicas: int) -> Manifest:
    resources = {"requests": {"cpu": "500m", "memory": "128Mi"}}
    pod = {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}
    spec = {"replicas": replicas, "template": {"spec": pod}}
    meta = {"name": name, "namespace": NS}
    manifest = parse_object({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec})
    assert isinstance(manifest, Manifest)
    return manifest


def feed(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS, "name": name}


async def test_two_subscriptions_in_a_row_do_not_overcommit_a_cluster(private_nats: NatsServer) -> None:
    nc = NATS()
    await nc.connect(private_nats.url)
    js = nc.jetstream()
    await ensure_buckets(js)
    hub = Stores(js)
    manifests: ObjectStore[Manifest] = ObjectStore(js, KindInfo.of(Manifest))
    cluster = await hub.clusters.create(build_cluster("edge-ns", labels={"test": NS}))
    one_cpu = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    nodes = [{"name": f"n{i}", "allocatable": one_cpu} for i in range(2)]
    inventory = NodeInventory.model_validate({"clusterId": cluster.spec.cluster_id, "nodes": nodes})
    await StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory).put(object_key("edge-ns", "mc"), inventory, 0)
    key_of = {name: f"apps/v1/Deployment/{NS}/{name}" for name in ("first", "second")}
    async with (
        running_service("hub-feedinventory", build_feed_inventories, private_nats.url),
        running_service("clusternet-predictor", build_predictor, private_nats.url),
        running_service("clusternet-scheduler", build_scheduler, private_nats.url),
    ):
        # Room for 4 replicas of 500m (two 1-CPU nodes); the first takes 3.
        await manifests.create(deployment("first", 3))
        first = await hub.subs.create(build_subscription("first", NS, selecting(NS), [feed("first")], **DYNAMIC))
        await eventually(lambda: hub.replicas(first, {key_of["first"]: [3]}), 15, what="the first divided")

        # The second, right after, before any of the first's pods run: 1 left, 2 unscheduled.
        await manifests.create(deployment("second", 3))
        second = await hub.subs.create(build_subscription("second", NS, selecting(NS), [feed("second")], **DYNAMIC))
        await eventually(lambda: hub.replicas(second, {key_of["second"]: [1]}), 15, what="the second divided")
        binding = await hub.binding(second)
        assert binding is not None and binding.unscheduled_replicas == {key_of["second"]: 2}
        assert binding.predicted_replicas == {key_of["second"]: [1]}
    await nc.close()

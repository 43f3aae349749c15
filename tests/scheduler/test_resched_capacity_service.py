"""Capacity in the running scheduler and predictor: replicas with no room are reported, and placed
when a cluster they select gains room past the threshold; the predictor's figures are kept."""

from __future__ import annotations

from collections.abc import Callable

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.predictor.service import build as build_predictor
from clusternet_nats.scheduler.service import build
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually

from tests.scheduler.conftest import Stores, build_inventory, selecting

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]
DYNAMIC = {"type": "Dynamic", "dynamicDividing": {"strategy": "Spread"}}


async def report_nodes(hub: Stores, cluster: ManagedCluster, count: int) -> None:
    """The cluster's node inventory, as its agent reports it: `count` idle 1-CPU nodes."""
    one = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    items = [{"name": f"n{i}", "allocatable": one, "capacity": one, "requested": {}} for i in range(count)]
    inventory = NodeInventory.model_validate({"clusterId": cluster.spec.cluster_id, "nodes": items})
    store = StatusStore(hub.js, NODE_INVENTORIES_BUCKET, NodeInventory)
    await store.put_if_changed(object_key(cluster.namespace, cluster.name), inventory)


async def test_replicas_without_room_are_reported_then_placed_when_a_cluster_grows(
    nats_server: NatsServer,
    hub: Stores,
    unique_ns: str,
    make_cluster: ClusterFactory,
    make_sub: SubscriptionFactory,
) -> None:
    a, b = [await hub.clusters.create(make_cluster(f"{unique_ns}-{x}", labels={"test": unique_ns})) for x in "ab"]
    for cluster in (a, b):
        await report_nodes(hub, cluster, 1)
    feed = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": unique_ns}
    dividing = {"schedulingStrategy": "Dividing", "dividingScheduling": DYNAMIC}
    sub = await hub.subs.create(make_sub("app", unique_ns, selecting(unique_ns), feeds=[feed], **dividing))
    await hub.inventories.create(build_inventory(sub, [6], {"resources": {"requests": {"cpu": "500m"}}}))
    key = f"apps/v1/Deployment/{unique_ns}/web"
    async with (
        running_service("clusternet-predictor", build_predictor, nats_server.url),
        running_service("clusternet-scheduler", build, nats_server.url),
    ):
        # One 1-CPU node each: room for 2 replicas of 500m in each cluster, 4 of the 6.
        binding = await hub.wait_bound(sub, [f"{unique_ns}-a/mc", f"{unique_ns}-b/mc"])
        assert binding.replicas == {key: [2, 2]}
        assert binding.unscheduled_replicas == {key: 2}
        assert binding.predicted_replicas == {key: [2, 2]}
        assert binding.condition is not None
        assert (binding.condition.status, binding.condition.reason) == ("False", "PartiallyScheduled")
        failed = await eventually(lambda: hub.events(sub, "FailedScheduling"), 60)
        assert failed[0].startswith(f"could not place 2 replica(s) of {key}"), failed

        # b gets a second node: room past the threshold, so the 2 left over go there.
        await report_nodes(hub, b, 2)
        await eventually(lambda: hub.replicas(sub, {key: [2, 4]}), 60, what="the 2 left over placed on b")
        binding = await eventually(lambda: hub.binding(sub), 60)
        assert binding is not None and binding.unscheduled_replicas == {}
        assert binding.condition is not None and binding.condition.status == "True"


async def test_a_higher_priority_subscription_takes_the_room_and_the_preempted_one_is_told(
    nats_server: NatsServer,
    hub: Stores,
    unique_ns: str,
    make_cluster: ClusterFactory,
    make_sub: SubscriptionFactory,
) -> None:
    a = await hub.clusters.create(make_cluster(f"{unique_ns}-a", labels={"test": unique_ns}))
    await report_nodes(hub, a, 1)
    requests = {"resources": {"requests": {"cpu": "500m"}}}
    dividing = {"schedulingStrategy": "Dividing", "dividingScheduling": DYNAMIC}

    async def dynamic(name: str, priority: int) -> Subscription:
        feed = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": unique_ns}
        sub = make_sub(name, unique_ns, selecting(unique_ns), feeds=[feed], priority=priority, **dividing)
        await hub.inventories.create(build_inventory(sub, [2], requests))
        return await hub.subs.create(sub)

    async with (
        running_service("clusternet-predictor", build_predictor, nats_server.url),
        running_service("clusternet-scheduler", build, nats_server.url),
    ):
        low = await dynamic("low", 0)
        await eventually(lambda: hub.replicas(low, {f"apps/v1/Deployment/{unique_ns}/low": [2]}), 60)
        high = await dynamic("high", 10)
        await eventually(lambda: hub.replicas(high, {f"apps/v1/Deployment/{unique_ns}/high": [2]}), 60)
        told = await eventually(lambda: hub.events(low, "Preempted"), 60)
        assert told == [f"preempted by {unique_ns}/high (priority 10): rescheduling"]
        # Divided again from nothing: the room on a is the high-priority Subscription's now.
        binding = await eventually(lambda: hub.unplaced(low), 60, what="low left without room")
        assert binding.unscheduled_replicas == {f"apps/v1/Deployment/{unique_ns}/low": 2}

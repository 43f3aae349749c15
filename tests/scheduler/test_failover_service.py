"""Failover in the running scheduler: a NotReady cluster's share moves, the old share is kept
until the new placement reports available, and nothing flaps back when the cluster returns."""

from __future__ import annotations

from collections.abc import Callable

from clusternet_nats.api.apps import Subscription, SubscriptionStatus
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.labels import UNSCHEDULABLE_TAINT
from clusternet_nats.api.meta import Taint
from clusternet_nats.scheduler.service import build
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds

from tests.scheduler.conftest import Stores, build_inventory, selecting
from tests.scheduler.test_scheduler_service import STATIC

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]


def available(sub: Subscription, clusters: dict[str, ManagedCluster], replicas: dict[str, int]) -> SubscriptionStatus:
    """The deployer's aggregated status with these available replicas per cluster."""
    details = [
        {"clusterId": clusters[c].spec.cluster_id, "available": True, "replicaStatus": {"availableReplicas": n}}
        for c, n in replicas.items()
    ]
    feed = sub.spec.feeds[0].to_json_dict()
    return SubscriptionStatus.model_validate({"aggregatedStatuses": [{**feed, "feedStatusDetails": details}]})


async def test_a_not_ready_clusters_share_moves_gracefully_and_does_not_flap_back(
    nats_server: NatsServer,
    hub: Stores,
    unique_ns: str,
    make_cluster: ClusterFactory,
    make_sub: SubscriptionFactory,
) -> None:
    clusters = {
        x: await hub.clusters.create(make_cluster(f"{unique_ns}-{x}", labels={"test": unique_ns})) for x in "abc"
    }
    feed = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": unique_ns}
    subscribers = [{**selecting(unique_ns)[0], "weight": 1}]
    sub = await hub.subs.create(
        make_sub("app", unique_ns, subscribers, feeds=[feed], schedulingStrategy="Dividing", dividingScheduling=STATIC)
    )
    await hub.inventories.create(build_inventory(sub, [9]))
    key = f"apps/v1/Deployment/{unique_ns}/web"
    names = {x: f"{unique_ns}-{x}/mc" for x in "abc"}
    statuses = StatusStore(hub.js, "subscriptions-status", SubscriptionStatus)
    async with running_service("clusternet-scheduler", build, nats_server.url):
        binding = await hub.wait_bound(sub, list(names.values()))
        assert binding.replicas == {key: [3, 3, 3]}

        b = clusters["b"]
        b.spec.taints = [Taint(key=UNSCHEDULABLE_TAINT, value="ClusterStatusUnknown", effect="NoSchedule")]
        b = await hub.clusters.update(b)
        binding = await eventually(
            lambda: hub.draining(sub), 10, what="b's share moved to a and c, b kept while they come up"
        )
        assert binding.binding_clusters == list(names.values())
        assert binding.replicas == {key: [5, 3, 4]}
        assert binding.draining_clusters == [names["b"]]
        moved = await eventually(lambda: hub.events(sub, "FailingOver"), 60)
        assert moved == [
            f"moving the replicas of {names['b']} to other clusters; kept there until the new placement is available"
        ]

        # Not yet: c reports 3 of its 4.
        await statuses.put(object_key(unique_ns, "app"), available(sub, clusters, {"a": 5, "c": 3}), 0)
        await holds(lambda: hub.draining(sub), 1, "b kept until c has its 4")
        current = await statuses.get(object_key(unique_ns, "app"))
        assert current is not None
        await statuses.put(
            object_key(unique_ns, "app"), available(sub, clusters, {"a": 5, "b": 3, "c": 4}), current.revision
        )
        binding = await hub.wait_bound(sub, [names["a"], names["c"]])
        assert binding.replicas == {key: [5, 4]}
        assert binding.draining_clusters == []

        # b is Ready again: its share stays where it went.
        b.spec.taints = []
        await hub.clusters.update(b)
        await holds(lambda: hub.replicas(sub, {key: [5, 4]}), 1.5, "replicas do not flap back")


async def test_a_draining_cluster_that_is_deleted_is_dropped_at_once(
    nats_server: NatsServer, hub: Stores, unique_ns: str, make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    _, b = [await hub.clusters.create(make_cluster(f"{unique_ns}-{x}", labels={"test": unique_ns})) for x in "ab"]
    feed = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": unique_ns}
    subscribers = [{**selecting(unique_ns)[0], "weight": 1}]
    sub = await hub.subs.create(
        make_sub("app", unique_ns, subscribers, feeds=[feed], schedulingStrategy="Dividing", dividingScheduling=STATIC)
    )
    await hub.inventories.create(build_inventory(sub, [4]))
    key = f"apps/v1/Deployment/{unique_ns}/web"
    async with running_service("clusternet-scheduler", build, nats_server.url):
        await hub.wait_bound(sub, [f"{unique_ns}-a/mc", f"{unique_ns}-b/mc"])
        b.spec.taints = [Taint(key=UNSCHEDULABLE_TAINT, value="ClusterStatusUnknown", effect="NoSchedule")]
        await hub.clusters.update(b)
        binding = await eventually(lambda: hub.draining(sub), 60, what="b draining")
        assert binding.replicas == {key: [4, 2]}

        await hub.clusters.delete(b.namespace, b.name)
        binding = await hub.wait_bound(sub, [f"{unique_ns}-a/mc"])
        assert binding.replicas == {key: [4]} and binding.draining_clusters == []

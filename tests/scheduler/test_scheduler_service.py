"""The scheduler in-process against a real NATS: bindings follow Subscriptions and clusters.

Every test labels its clusters with its own namespace and selects only those, because the
scheduler sees every ManagedCluster on the shared server.
"""

from __future__ import annotations

from collections.abc import Callable

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Taint, Toleration
from clusternet_nats.scheduler.service import build
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds

from tests.scheduler.conftest import Stores, build_inventory, selecting

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]
STATIC = {"type": "Static"}


async def test_binding_follows_labels_taints_tolerations_restarts_and_deletion(
    nats_server: NatsServer, hub: Stores, unique_ns: str, make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    a, _, c = [
        await hub.clusters.create(make_cluster(f"{unique_ns}-{x}", labels={"test": unique_ns, "env": env}))
        for x, env in (("a", "prod"), ("b", "prod"), ("c", "dev"))
    ]
    sub = await hub.subs.create(make_sub("app", unique_ns, selecting(unique_ns, env="prod")))
    async with running_service("clusternet-scheduler", build, nats_server.url):
        binding = await hub.wait_bound(sub, [f"{unique_ns}-a/mc", f"{unique_ns}-b/mc"])
        assert binding.spec_hash == spec_hash(sub.spec)
        assert binding.desired_releases == 2
        assert binding.subscription_uid == sub.metadata.uid
        assert binding.replicas == {}

        c.labels["env"] = "prod"
        await hub.clusters.update(c)
        await hub.wait_bound(sub, [f"{unique_ns}-{x}/mc" for x in "abc"])
        scheduled = await eventually(lambda: hub.events(sub, "Scheduled"), 60)
        assert scheduled[0] == f"Successfully bound {unique_ns}/app to {unique_ns}-a/mc,{unique_ns}-b/mc"

    # While the scheduler is down, a cluster is tainted; the restarted one relists and converges.
    a.spec.taints = [Taint(key="maintenance", value=unique_ns, effect="NoSchedule")]
    await hub.clusters.update(a)
    async with running_service("clusternet-scheduler", build, nats_server.url):
        await hub.wait_bound(sub, [f"{unique_ns}-b/mc", f"{unique_ns}-c/mc"])

        sub.spec.cluster_tolerations = [Toleration(key="maintenance", operator="Exists")]
        sub = await hub.subs.update(sub)
        binding = await hub.wait_bound(sub, [f"{unique_ns}-{x}/mc" for x in "abc"])
        assert binding.spec_hash == spec_hash(sub.spec)

        await hub.subs.delete(sub.namespace, sub.name)
        await eventually(lambda: hub.unbound(sub), 60, what="binding removed with its Subscription")
    scheduled = await hub.events(sub, "Scheduled")
    assert len(scheduled) == 4, f"one Scheduled event per new binding, none repeated on restart: {scheduled}"


async def test_unschedulable_subscription_is_told_once_and_bound_when_a_cluster_fits(
    nats_server: NatsServer, hub: Stores, unique_ns: str, make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    tainted = [{"key": "dedicated", "value": unique_ns, "effect": "NoExecute"}]
    await hub.clusters.create(make_cluster(f"{unique_ns}-a", labels={"test": unique_ns}, taints=tainted))
    sub = await hub.subs.create(make_sub("app", unique_ns, selecting(unique_ns)))
    async with running_service("clusternet-scheduler", build, nats_server.url):
        binding = await hub.wait_bound(sub, [])
        assert binding.desired_releases == 0
        failed = await eventually(lambda: hub.events(sub, "FailedScheduling"), 60)
        assert "clusters are available: " in failed[0]
        assert f"1 cluster(s) had untolerated taint {{dedicated: {unique_ns}}}" in failed[0]

        await hub.clusters.create(make_cluster(f"{unique_ns}-b", labels={"test": unique_ns}))
        await hub.wait_bound(sub, [f"{unique_ns}-b/mc"])
        await eventually(lambda: hub.events(sub, "Scheduled"), 60)
    assert len(await hub.events(sub, "FailedScheduling")) == 1, "re-evaluating an unchanged failure tells no one"


async def test_static_dividing_splits_by_weight_follows_the_feed_inventory_and_keeps_its_place(
    nats_server: NatsServer, hub: Stores, unique_ns: str, make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    for x, weight in (("a", "1"), ("b", "2")):
        await hub.clusters.create(make_cluster(f"{unique_ns}-{x}", labels={"test": unique_ns, "weight": weight}))
    feed = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": unique_ns}
    subscribers = [{**selecting(unique_ns, weight=w)[0], "weight": int(w)} for w in ("1", "2")]
    sub = await hub.subs.create(
        make_sub("app", unique_ns, subscribers, feeds=[feed], schedulingStrategy="Dividing", dividingScheduling=STATIC)
    )
    finv = await hub.inventories.create(build_inventory(sub, [6]))
    key = f"apps/v1/Deployment/{unique_ns}/web"
    async with running_service("clusternet-scheduler", build, nats_server.url):
        binding = await hub.wait_bound(sub, [f"{unique_ns}-a/mc", f"{unique_ns}-b/mc"])
        assert binding.replicas == {key: [2, 4]}
        assert binding.condition is not None and binding.condition.reason == "Scheduled"

        finv.spec.feeds[0].desired_replicas = 9
        await hub.inventories.update(finv)
        await eventually(lambda: hub.replicas(sub, {key: [3, 6]}), 60, what="re-divided after the Deployment scaled")

        # A cluster joining does not re-divide a Dividing Subscription (Clusternet's admit): only a
        # spec or FeedInventory change does. A spec change then gives the new cluster its share.
        await hub.clusters.create(make_cluster(f"{unique_ns}-c", labels={"test": unique_ns, "weight": "2"}))
        await holds(lambda: hub.replicas(sub, {key: [3, 6]}), 1, "placed replicas stay where they are")
        sub.spec.subscribers[0].weight = 2
        sub = await hub.subs.update(sub)
        binding = await hub.wait_bound(sub, [f"{unique_ns}-{x}/mc" for x in "abc"])
        assert binding.replicas == {key: [3, 3, 3]}


async def test_dividing_waits_for_its_feed_inventory_and_says_why(
    nats_server: NatsServer, hub: Stores, unique_ns: str, make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    await hub.clusters.create(make_cluster(f"{unique_ns}-a", labels={"test": unique_ns}))
    feed = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": unique_ns}
    subscribers = [{**selecting(unique_ns)[0], "weight": 1}]
    sub = await hub.subs.create(
        make_sub("app", unique_ns, subscribers, feeds=[feed], schedulingStrategy="Dividing", dividingScheduling=STATIC)
    )
    async with running_service("clusternet-scheduler", build, nats_server.url):
        failed = await eventually(lambda: hub.events(sub, "FailedScheduling"), 60)
        assert failed == [f"waiting for the FeedInventory {unique_ns}/app of the current feeds"]
        binding = await hub.binding(sub)
        assert binding is not None and binding.binding_clusters == [] and binding.spec_hash == 0
        assert binding.condition is not None
        assert (binding.condition.status, binding.condition.reason) == ("False", "WaitingForFeedInventory")

        other = sub.model_copy(deep=True)
        other.spec.feeds[0].name = "other"
        await hub.inventories.create(build_inventory(other, [2]))
        await holds(lambda: hub.unbound_clusters(sub), 1, "an inventory of other feeds is not used")
        await hub.inventories.delete(unique_ns, "app")
        await hub.inventories.create(build_inventory(sub, [2]))
        binding = await hub.wait_bound(sub, [f"{unique_ns}-a/mc"])
        assert binding.replicas == {f"apps/v1/Deployment/{unique_ns}/web": [2]}
        assert binding.spec_hash == spec_hash(sub.spec)


async def test_a_subscription_for_an_unknown_scheduler_is_told_so(
    nats_server: NatsServer, hub: Stores, unique_ns: str, make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    await hub.clusters.create(make_cluster(f"{unique_ns}-a", labels={"test": unique_ns}))
    sub = await hub.subs.create(make_sub("app", unique_ns, selecting(unique_ns), schedulerName="elsewhere"))
    async with running_service("clusternet-scheduler", build, nats_server.url):
        failed = await eventually(lambda: hub.events(sub, "FailedScheduling"), 60)
        assert failed == ["no profile named 'elsewhere' (profiles: default)"]
        binding = await hub.binding(sub)
        assert binding is not None and binding.condition is not None
        assert (binding.binding_clusters, binding.condition.reason) == ([], "NoProfile")

        sub.spec.scheduler_name = "default"
        sub = await hub.subs.update(sub)
        binding = await hub.wait_bound(sub, [f"{unique_ns}-a/mc"])
        assert binding.condition is not None and binding.condition.status == "True"

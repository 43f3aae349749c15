"""Whole decisions as functions of clusters, a Subscription and its FeedInventory."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.binding import spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.algorithm import schedule
from clusternet_nats.scheduler.profiles import default_framework

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]
WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "app"}
WEB_KEY = "apps/v1/Deployment/app/web"


async def test_replication_binds_every_feasible_cluster_sorted(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    gone = make_cluster("ns-0", labels={"env": "prod"})
    gone.metadata.deletion_timestamp = datetime.now(UTC)
    clusters = [
        make_cluster("ns-c", labels={"env": "prod"}),
        make_cluster("ns-a", labels={"env": "prod"}),
        make_cluster("ns-b", labels={"env": "dev"}),
        gone,
    ]
    sub = make_sub("s", "default", [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}])
    decision = await schedule(default_framework(), sub, clusters, None, None)
    assert decision.failure is None
    assert decision.binding.binding_clusters == ["ns-a/mc", "ns-c/mc"]
    assert decision.binding.desired_releases == 2
    assert decision.binding.replicas == {}
    assert decision.binding.spec_hash == spec_hash(sub.spec)
    assert decision.binding.subscription_uid == sub.metadata.uid
    assert set(decision.scores) == {"ns-a/mc", "ns-c/mc"}


async def test_no_feasible_cluster_is_an_empty_binding_with_a_reason(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    sub = make_sub("s", "default", [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}])
    decision = await schedule(default_framework(), sub, [make_cluster("ns-a")], None, None)
    assert decision.binding.binding_clusters == []
    assert decision.binding.desired_releases == 0
    assert decision.failure == "0/1 clusters are available: 1 cluster(s) didn't match cluster affinity."


async def test_static_dividing_reads_replicas_from_the_feed_inventory(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    clusters = [make_cluster("ns-b", labels={"w": "2"}), make_cluster("ns-a", labels={"w": "1"})]
    sub = make_sub(
        "s",
        "default",
        [{"clusterAffinity": {"matchLabels": {"w": w}}, "weight": int(w)} for w in ("1", "2")],
        feeds=[WEB],
        schedulingStrategy="Dividing",
    )
    finv = FeedInventory.new("s", "default", spec={"feeds": [{**WEB, "desiredReplicas": 6}]})
    decision = await schedule(default_framework(), sub, clusters, finv, None)
    assert decision.binding.binding_clusters == ["ns-a/mc", "ns-b/mc"]
    assert decision.binding.replicas == {WEB_KEY: [2, 4]}
    assert decision.unscheduled == {} and decision.predictions == {} and decision.preempted == []
    without = await schedule(default_framework(), sub, clusters, None, None)
    assert without.binding.replicas == {WEB_KEY: []}, "no FeedInventory: nothing known to divide"

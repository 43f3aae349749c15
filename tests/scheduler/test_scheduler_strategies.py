"""Placement strategies and whole decisions, as pure functions of clusters, Subscription and Manifests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from clusternet_nats.api.apps import Manifest, Subscription
from clusternet_nats.api.binding import spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import Feed
from clusternet_nats.domain.feeds import format_feed
from clusternet_nats.scheduler.algorithm import default_framework, schedule
from clusternet_nats.scheduler.feeds import FeedManifests, ManifestMissingError
from clusternet_nats.scheduler.strategies import (
    Replication,
    StaticDividing,
    UnsupportedStrategyError,
    strategy_for,
)
from clusternet_nats.scheduler.strategies.static_dividing import divide

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]
WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "app"}
WEB_KEY = "apps/v1/Deployment/app/web"


def deployment_manifest(replicas: int | None, kind: str = "Deployment") -> Manifest:
    spec: dict[str, Any] = {} if replicas is None else {"replicas": replicas}
    metadata = {"name": "web", "namespace": "app"}
    obj = parse_object({"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": spec})
    assert isinstance(obj, Manifest)
    return obj


def no_replicas(feed: Feed) -> int | None:
    raise AssertionError(f"replication must not look up replicas of {format_feed(feed)}")


@pytest.mark.parametrize(
    ("replicas", "weights", "expected"),
    [
        (6, [1, 2], [2, 4]),
        (7, [1, 2], [2, 5]),
        (4, [1, 1, 1], [2, 1, 1]),
        (4, [5, 3, 2], [3, 1, 0]),  # leftovers go by weight, as Clusternet's, not by largest remainder
        (3, [0, 1], [0, 3]),
        (0, [1, 2], [0, 0]),
    ],
)
def test_static_divide_mirrors_clusternet(replicas: int, weights: list[int], expected: list[int]) -> None:
    assert divide(replicas, weights) == expected
    assert sum(expected) == replicas


def test_static_dividing_weighs_clusters_by_matching_subscribers(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    clusters = [make_cluster("ns-a", labels={"tier": "one"}), make_cluster("ns-b", labels={"tier": "two"})]
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "app"}
    sub = make_sub(
        "s",
        "default",
        [
            {"clusterAffinity": {"matchLabels": {"tier": "one"}}, "weight": 1},
            {"clusterAffinity": {"matchLabels": {"tier": "two"}}, "weight": 1},
            {"clusterAffinity": {}, "weight": 1},
        ],
        feeds=[WEB, configmap],
        schedulingStrategy="Dividing",
    )
    desired = {"Deployment app/web": 9, "ConfigMap app/cm": None}
    result = StaticDividing().assign(sub, clusters, lambda feed: desired[format_feed(feed)])
    assert result == {WEB_KEY: [5, 4], "v1/ConfigMap/app/cm": []}


def test_static_dividing_without_weights_divides_nothing(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    sub = make_sub("s", "default", [{"clusterAffinity": {}}], feeds=[WEB], schedulingStrategy="Dividing")
    assert StaticDividing().assign(sub, [make_cluster("ns-a")], lambda _feed: 3) == {}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, Replication),
        ({"schedulingStrategy": "Dividing"}, StaticDividing),
        ({"schedulingStrategy": "Dividing", "dividingScheduling": {"type": "Static"}}, StaticDividing),
    ],
)
def test_strategy_for_spec(make_sub: SubscriptionFactory, spec: dict[str, Any], expected: type) -> None:
    assert isinstance(strategy_for(make_sub("s", "default", [{"clusterAffinity": {}}], **spec).spec), expected)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"schedulingStrategy": "Dividing", "dividingScheduling": {"type": "Dynamic"}}, "Dividing/Dynamic"),
        ({"schedulingBySubGroup": True}, "schedulingBySubGroup"),
    ],
)
def test_strategies_not_supported_yet(make_sub: SubscriptionFactory, spec: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedStrategyError, match=message):
        strategy_for(make_sub("s", "default", [{"clusterAffinity": {}}], **spec).spec)


def test_replication_binds_every_feasible_cluster_sorted(
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
    decision = schedule(default_framework(), sub, clusters, no_replicas)
    assert decision.failure is None
    assert decision.binding.binding_clusters == ["ns-a/mc", "ns-c/mc"]
    assert decision.binding.desired_releases == 2
    assert decision.binding.replicas == {}
    assert decision.binding.spec_hash == spec_hash(sub.spec)
    assert decision.binding.subscription_uid == sub.metadata.uid
    assert set(decision.scores) == {"ns-a/mc", "ns-c/mc"}


def test_no_feasible_cluster_is_an_empty_binding_with_a_reason(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    sub = make_sub("s", "default", [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}])
    decision = schedule(default_framework(), sub, [make_cluster("ns-a")], no_replicas)
    assert decision.binding.binding_clusters == []
    assert decision.binding.desired_releases == 0
    assert decision.failure == "0/1 clusters are available: 1 cluster(s) didn't match cluster affinity."


def test_static_dividing_reads_replicas_from_the_feeds_manifest(
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
    manifests = FeedManifests()
    with pytest.raises(ManifestMissingError, match="Deployment app/web"):
        schedule(default_framework(), sub, clusters, manifests.desired_replicas)
    manifests.update("clusternet-reserved.deployments.app.web", deployment_manifest(6))
    decision = schedule(default_framework(), sub, clusters, manifests.desired_replicas)
    assert decision.binding.binding_clusters == ["ns-a/mc", "ns-b/mc"]
    assert decision.binding.replicas == {WEB_KEY: [2, 4]}


def test_feed_manifests_follow_changes_and_only_workloads_have_replicas() -> None:
    manifests = FeedManifests()
    web = Feed.model_validate(WEB)
    daemons = Feed.model_validate({**WEB, "kind": "DaemonSet"})
    key = "clusternet-reserved.deployments.app.web"
    manifests.update(key, deployment_manifest(3))
    assert manifests.desired_replicas(web) == 3
    manifests.update(key, deployment_manifest(None))
    assert manifests.desired_replicas(web) is None, "a Deployment without spec.replicas has none to divide"
    changed = manifests.update(key, deployment_manifest(3, kind="DaemonSet"))
    assert len(changed) == 2, "both the feed the Manifest held and the one it holds now changed"
    assert manifests.desired_replicas(daemons) is None, "Clusternet divides only Deployments, ReplicaSets, StatefulSets"
    with pytest.raises(ManifestMissingError):
        manifests.desired_replicas(web)
    manifests.update(key, None)
    with pytest.raises(ManifestMissingError):
        manifests.desired_replicas(daemons)

"""Filter and score plugins, and the profile that runs them, on plain objects."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.framework import MAX_SCORE
from clusternet_nats.scheduler.plugins.cluster_affinity import ClusterAffinity
from clusternet_nats.scheduler.plugins.taint_toleration import TaintToleration
from clusternet_nats.scheduler.profiles import default_framework

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]


@pytest.mark.parametrize(
    ("affinity", "feasible"),
    [
        ({"matchLabels": {"env": "prod"}}, True),
        ({"matchLabels": {"env": "dev"}}, False),
        ({"matchExpressions": [{"key": "region", "operator": "In", "values": ["sh", "bj"]}]}, True),
        ({"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["sh"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
        ({"matchLabels": {"env": "prod"}, "matchExpressions": [{"key": "region", "operator": "Exists"}]}, True),
        ({}, True),
    ],
)
def test_cluster_affinity_applies_label_selectors(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory, affinity: dict[str, object], feasible: bool
) -> None:
    cluster = make_cluster("ns-a", labels={"env": "prod", "region": "sh"})
    sub = make_sub("s", "default", [{"clusterAffinity": affinity}])
    status = ClusterAffinity().filter(sub, cluster)
    assert status.is_success is feasible
    if not feasible:
        assert status.reasons == ("cluster(s) didn't match cluster affinity",)
        assert status.plugin == "ClusterAffinity"


def test_cluster_affinity_any_subscriber_is_enough(make_cluster: ClusterFactory, make_sub: SubscriptionFactory) -> None:
    cluster = make_cluster("ns-a", labels={"env": "dev"})
    subscribers = [{"clusterAffinity": {"matchLabels": {"env": env}}} for env in ("prod", "dev")]
    sub = make_sub("s", "default", subscribers)
    assert ClusterAffinity().filter(sub, cluster).is_success


@pytest.mark.parametrize(
    ("effect", "tolerations", "feasible"),
    [
        ("NoSchedule", [], False),
        ("NoExecute", [], False),
        ("PreferNoSchedule", [], True),
        ("NoSchedule", [{"key": "k", "value": "v", "effect": "NoSchedule"}], True),
        ("NoSchedule", [{"key": "k", "operator": "Exists"}], True),
        ("NoSchedule", [{"key": "k", "value": "other"}], False),
        ("NoSchedule", [{"key": "k", "value": "v", "effect": "NoExecute"}], False),
    ],
)
def test_taint_toleration_filters_untolerated_hard_taints(
    make_cluster: ClusterFactory,
    make_sub: SubscriptionFactory,
    effect: str,
    tolerations: list[dict[str, str]],
    feasible: bool,
) -> None:
    cluster = make_cluster("ns-a", taints=[{"key": "k", "value": "v", "effect": effect}])
    sub = make_sub("s", "default", [{"clusterAffinity": {}}], clusterTolerations=tolerations)
    status = TaintToleration().filter(sub, cluster)
    assert status.is_success is feasible
    if not feasible:
        assert status.reasons == ("cluster(s) had untolerated taint {k: v}",)


def test_taint_toleration_scores_prefer_no_schedule_taints_lower(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    soft = {"effect": "PreferNoSchedule", "value": "x"}
    clusters = [
        make_cluster("ns-a"),
        make_cluster("ns-b", taints=[{"key": "one", **soft}]),
        make_cluster("ns-c", taints=[{"key": "one", **soft}, {"key": "two", **soft}]),
    ]
    sub = make_sub("s", "default", [{"clusterAffinity": {}}])
    plugin = TaintToleration()
    scores = plugin.normalize_score(sub, plugin.score(sub, clusters))
    assert scores == {"ns-a/mc": MAX_SCORE, "ns-b/mc": 50, "ns-c/mc": 0}
    tolerant = make_sub("s", "default", [{"clusterAffinity": {}}], clusterTolerations=[{"operator": "Exists"}])
    assert set(plugin.normalize_score(tolerant, plugin.score(tolerant, clusters)).values()) == {MAX_SCORE}


def test_profile_summarises_why_no_cluster_fits(make_cluster: ClusterFactory, make_sub: SubscriptionFactory) -> None:
    clusters = [
        make_cluster("ns-a", labels={"env": "dev"}),
        make_cluster("ns-b", labels={"env": "dev"}),
        make_cluster("ns-c", labels={"env": "prod"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    ]
    sub = make_sub("s", "default", [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}])
    feasible, diagnosis = default_framework().find_feasible(sub, clusters)
    assert feasible == []
    assert diagnosis.summary(3) == (
        "0/3 clusters are available: 1 cluster(s) had untolerated taint {k: v}, "
        "2 cluster(s) didn't match cluster affinity."
    )
    assert diagnosis.summary(0) == "no clusters available to schedule subscriptions"

"""Which Subscriptions a cluster change concerns (scheduler/dependencies.py): by the labels their
selectors require, by the clusters they are bound to, and only when labels, taints or deletion
changed, as Clusternet's ManagedCluster handler filters its updates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Taint
from clusternet_nats.scheduler.dependencies import Dependencies

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]


def affinity(**selector: Any) -> list[dict[str, Any]]:
    return [{"clusterAffinity": selector}]


def test_a_cluster_change_concerns_the_subscriptions_selecting_it_before_or_after(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    deps = Dependencies()
    deps.subscription_changed("ns.prod", make_sub("prod", "ns", affinity(matchLabels={"env": "prod"})))
    deps.subscription_changed("ns.dev", make_sub("dev", "ns", affinity(matchLabels={"env": "dev", "zone": "a"})))
    deps.subscription_changed(
        "ns.in", make_sub("in", "ns", affinity(matchExpressions=[{"key": "env", "operator": "In", "values": ["qa"]}]))
    )
    deps.subscription_changed(
        "ns.all", make_sub("all", "ns", affinity(matchExpressions=[{"key": "env", "operator": "Exists"}]))
    )
    cluster = make_cluster("c1", labels={"env": "prod"})
    assert deps.cluster_changed("c1/mc", cluster) == {"ns.prod", "ns.all"}, "a join"
    assert deps.cluster_changed("c1/mc", cluster.model_copy(deep=True)) == set(), "nothing scheduling reads changed"

    relabelled = cluster.model_copy(deep=True)
    relabelled.metadata.labels = {"env": "dev", "zone": "a"}
    assert deps.cluster_changed("c1/mc", relabelled) == {"ns.prod", "ns.dev", "ns.all"}, "old and new selectors"

    tainted = relabelled.model_copy(deep=True)
    tainted.spec.taints = [Taint(key="k", effect="NoSchedule")]
    assert deps.cluster_changed("c1/mc", tainted) == {"ns.dev", "ns.all"}
    assert deps.cluster_changed("c1/mc", None) == {"ns.dev", "ns.all"}, "a leave"

    deps.subscription_changed("ns.dev", None)
    assert deps.cluster_changed("c1/mc", tainted) == {"ns.all"}, "a deleted Subscription depends on nothing"
    qa = make_cluster("c2", labels={"env": "qa"})
    assert deps.cluster_changed("c2/mc", qa) == {"ns.in", "ns.all"}


def test_bound_subscriptions_follow_their_clusters_and_waiting_ones_follow_capacity(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    deps = Dependencies()
    sub = make_sub("s", "ns", affinity(matchLabels={"env": "prod"}))
    deps.subscription_changed("ns.s", sub)
    cluster = make_cluster("c1", labels={"env": "prod"})
    deps.cluster_changed("c1/mc", cluster)
    binding = SubscriptionBinding(subscription_uid="u", spec_hash=1, binding_clusters=["c1/mc"])
    deps.binding_changed("ns.s", binding)
    relabelled = cluster.model_copy(deep=True)
    relabelled.metadata.labels = {"env": "other"}
    deps.subscription_changed("ns.s", make_sub("s", "ns", affinity(matchLabels={"env": "none"})))
    assert deps.cluster_changed("c1/mc", relabelled) == {"ns.s"}, "bound there, though it selects it no more"

    assert deps.capacity_changed("c1/mc") == set(), "nothing waits for room"
    deps.subscription_changed("ns.s", sub)
    deps.binding_changed("ns.s", binding.model_copy(update={"unscheduled_replicas": {"f": 2}}))
    deps.cluster_changed("c1/mc", cluster)
    assert deps.capacity_changed("c1/mc") == {"ns.s"}
    assert deps.capacity_changed("unknown/mc") == set()
    deps.binding_changed("ns.s", binding)
    assert deps.capacity_changed("c1/mc") == set(), "placed in full: capacity no longer matters"


def test_candidates_are_the_clusters_a_subscription_could_select(
    make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    deps = Dependencies()
    for name, env in (("a", "prod"), ("b", "prod"), ("c", "dev"), ("d", "qa")):
        deps.cluster_changed(f"{name}/mc", make_cluster(name, labels={"env": env, "zone": name}))
    deps.subscription_changed("ns.prod", make_sub("prod", "ns", affinity(matchLabels={"env": "prod", "zone": "a"})))
    deps.subscription_changed(
        "ns.in",
        make_sub("in", "ns", affinity(matchExpressions=[{"key": "env", "operator": "In", "values": ["dev", "qa"]}])),
    )
    not_in = [{"key": "env", "operator": "NotIn", "values": ["x"]}]
    deps.subscription_changed("ns.any", make_sub("any", "ns", affinity(matchExpressions=not_in)))
    assert deps.candidates("ns.prod") == {"a/mc", "b/mc"}, "a superset of what it selects: one required pair's"
    assert deps.candidates("ns.in") == {"c/mc", "d/mc"}
    assert deps.candidates("ns.any") is None, "no label value required: every cluster"
    assert deps.candidates("ns.unknown") is None

    deps.cluster_changed("a/mc", make_cluster("a", labels={"env": "dev", "zone": "a"}))
    deps.cluster_changed("d/mc", None)
    assert deps.candidates("ns.prod") == {"b/mc"}
    assert deps.candidates("ns.in") == {"a/mc", "c/mc"}

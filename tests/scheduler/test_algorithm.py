"""Whole scheduling cycles: subgroups, the feasible-cluster cap, predicting, preemption.

Ported from clusternet pkg/scheduler/algorithm/generic_test.go: TestSubgroupClusters (its one
case, same clusters, scores and answer). The rest are the rules of generic.go that it does not
test, and what Clusternet declares but never built (priority preemption).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.loader import load_path
from clusternet_nats.scheduler.algorithm import schedule
from clusternet_nats.scheduler.framework.interfaces import BoundSubscription, FeedReplicas
from clusternet_nats.scheduler.framework.runtime import Framework, Plugins
from clusternet_nats.scheduler.plugins.cluster_affinity import ClusterAffinity
from clusternet_nats.scheduler.plugins.dynamic_assigner import DynamicAssigner
from clusternet_nats.scheduler.plugins.preemption import DefaultPreemption
from clusternet_nats.scheduler.plugins.static_assigner import StaticAssigner
from clusternet_nats.scheduler.plugins.taint_toleration import TaintToleration
from clusternet_nats.scheduler.profiles import default_framework
from clusternet_nats.testing import compat

from tests.scheduler.conftest import build_cluster, build_subscription

WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "app", "name": "web"}
WEB_KEY = "apps/v1/Deployment/app/web"
DYNAMIC = {"schedulingStrategy": "Dividing", "dividingScheduling": {"type": "Dynamic", "dynamicDividing": {}}}


@dataclass
class FixedPredictor:
    """A Predict plugin that answers fixed figures (clusters it has none for are left out)."""

    answers: dict[str, FeedReplicas]
    name: str = "FixedPredictor"
    asked: list[list[str]] = field(default_factory=list)

    async def predict(
        self, sub: Subscription, finv: FeedInventory, clusters: Sequence[ManagedCluster]
    ) -> dict[str, FeedReplicas]:
        self.asked.append([c.namespaced_name() for c in clusters])
        names = [c.namespaced_name() for c in clusters]
        return {name: list(self.answers[name]) for name in names if name in self.answers}


@dataclass
class Others:
    """A Handle over a fixed set of other Subscriptions."""

    bound: list[BoundSubscription]

    def bound_subscriptions(self) -> Iterable[BoundSubscription]:
        return self.bound


def framework(*predictors: FixedPredictor, handle: Others | None = None) -> Framework:
    taints = TaintToleration()
    plugins = Plugins(
        filter=[ClusterAffinity(), taints],
        post_filter=[DefaultPreemption()],
        predict=list(predictors),
        score=[(taints, 3)],
        pre_assign=[DynamicAssigner()],
        assign=[StaticAssigner(), DynamicAssigner()],
    )
    return Framework(plugins=plugins, handle=handle or Others([]))


def inventory(sub: Subscription, *desired: int | None) -> FeedInventory:
    feeds = [{**f.to_json_dict(), "desiredReplicas": d} for f, d in zip(sub.spec.feeds, desired, strict=True)]
    return FeedInventory.new(sub.name, sub.namespace, spec={"feeds": feeds})


def dynamic_sub(name: str = "s", **spec: Any) -> Subscription:
    return build_subscription(name, "app", [{"clusterAffinity": {}}], feeds=[WEB], **{**DYNAMIC, **spec})


async def test_subgroups_take_each_subscribers_best_clusters() -> None:
    """generic_test.go TestSubgroupClusters: beijing's best (cluster1, 99) and shanghai's (cluster3)."""
    soft = [{"key": "k", "value": "x", "effect": "PreferNoSchedule"}]  # scores cluster2 below cluster1
    clusters = [
        build_cluster("clusternet-123", "cluster1", labels={"region": "ap-beijing"}),
        build_cluster("clusternet-456", "cluster2", labels={"region": "ap-beijing"}, taints=soft),
        build_cluster("clusternet-789", "cluster3", labels={"region": "ap-shanghai"}),
    ]
    subscribers = [
        {"clusterAffinity": {"matchLabels": {"region": region}}, "subGroupStrategy": {"minClusters": 1}}
        for region in ("ap-beijing", "ap-shanghai")
    ]
    sub = build_subscription("s", "app", subscribers, schedulingBySubGroup=True)
    decision = await schedule(default_framework(), sub, clusters, None, None)
    assert decision.binding.binding_clusters == ["clusternet-123/cluster1", "clusternet-789/cluster3"]
    assert decision.scores["clusternet-456/cluster2"] < decision.scores["clusternet-123/cluster1"]


async def test_subgroups_need_a_strategy_per_subscriber() -> None:
    sub = build_subscription("s", "app", [{"clusterAffinity": {}}], schedulingBySubGroup=True)
    decision = await schedule(default_framework(), sub, [build_cluster("ns-a")], None, None)
    assert decision.failure == "subscribers[0].subGroupStrategy: required with schedulingBySubGroup"
    assert decision.binding.binding_clusters == []


async def test_dividing_over_many_clusters_binds_numFeasibleClustersToFind_of_them() -> None:
    clusters = [build_cluster(f"ns-{i:04}") for i in range(1000)]
    subscribers = [{"clusterAffinity": {}, "weight": 1}]
    static = build_subscription("s", "app", subscribers, feeds=[WEB], schedulingStrategy="Dividing")
    current = SubscriptionBinding(subscription_uid="u", spec_hash=0, binding_clusters=["ns-0999/mc"])
    decision = await schedule(default_framework(), static, clusters, inventory(static, 840), current)
    assert len(decision.binding.binding_clusters) == 420, "1000 clusters: 42% of them"
    assert "ns-0999/mc" in decision.binding.binding_clusters, "clusters already bound are kept first"
    assert decision.binding.replicas[WEB_KEY] == [2] * 420
    replication = build_subscription("r", "app", [{"clusterAffinity": {}}])
    replicated = await schedule(default_framework(), replication, clusters, None, None)
    assert len(replicated.binding.binding_clusters) == 1000, "Replication binds every feasible cluster"


async def test_dynamic_dividing_asks_the_predictors_once_for_all_clusters() -> None:
    clusters = [build_cluster(f"ns-{n}") for n in "abc"]
    first = FixedPredictor({"ns-a/mc": [3], "ns-b/mc": [6], "ns-c/mc": [9]})
    second = FixedPredictor({"ns-a/mc": [3], "ns-b/mc": [None], "ns-c/mc": [3]}, name="Second")
    sub = dynamic_sub()
    decision = await schedule(framework(first, second), sub, clusters, inventory(sub, 6), None)
    assert first.asked == [["ns-a/mc", "ns-b/mc", "ns-c/mc"]] == second.asked
    assert decision.predictions == {"ns-a/mc": [3], "ns-b/mc": [6], "ns-c/mc": [3]}, "the smaller answer per feed"
    assert decision.binding.replicas == {WEB_KEY: [2, 3, 1]}
    assert decision.failure is None and decision.unscheduled == {}


async def test_replicas_without_room_are_unscheduled_and_said_why() -> None:
    clusters = [
        build_cluster("ns-a"),
        build_cluster("ns-b"),
        build_cluster("ns-c"),
        build_cluster("ns-d", taints=[{"key": "gpu", "value": "no", "effect": "NoSchedule"}]),
    ]
    predictor = FixedPredictor({"ns-a/mc": [2], "ns-b/mc": [0]})
    sub = dynamic_sub()
    decision = await schedule(framework(predictor), sub, clusters, inventory(sub, 5), None)
    assert decision.binding.replicas == {WEB_KEY: [2, 0]}
    assert decision.unscheduled == {WEB_KEY: 3}
    assert decision.failure == (
        f"could not place 3 replica(s) of {WEB_KEY}: 1/4 clusters took replicas; "
        "1 cluster(s) could not be predicted, 1 cluster(s) had untolerated taint {gpu: no}, "
        "2 cluster(s) had no room for more replicas."
    )


async def test_scaling_keeps_placed_replicas_where_they_are() -> None:
    clusters = [build_cluster(f"ns-{n}") for n in "abc"]
    sub = dynamic_sub()
    current = SubscriptionBinding(
        subscription_uid=sub.metadata.uid or "", spec_hash=0, binding_clusters=["ns-c/mc"], replicas={WEB_KEY: [4]}
    )
    predictor = FixedPredictor({"ns-a/mc": [10], "ns-b/mc": [10], "ns-c/mc": [0]})
    decision = await schedule(framework(predictor), sub, clusters, inventory(sub, 8), current)
    assert decision.binding.binding_clusters == ["ns-c/mc", "ns-a/mc", "ns-b/mc"]
    assert decision.binding.replicas == {WEB_KEY: [4, 2, 2]}


def holder(name: str, priority: int | None, replicas: list[int], clusters: list[str]) -> BoundSubscription:
    sub = build_subscription(name, "app", [{"clusterAffinity": {}}], feeds=[WEB], **DYNAMIC, priority=priority)
    binding = SubscriptionBinding(
        subscription_uid=sub.metadata.uid or "", spec_hash=0, binding_clusters=clusters, replicas={WEB_KEY: replicas}
    )
    return BoundSubscription(key=f"app/{name}", sub=sub, binding=binding)


async def test_higher_priority_preempts_the_lowest_priority_holders_first() -> None:
    clusters = [build_cluster("ns-a"), build_cluster("ns-b")]
    others = Others(
        [
            holder("low", 1, [2, 2], ["ns-a/mc", "ns-b/mc"]),
            holder("lowest", None, [3], ["ns-a/mc"]),
            holder("peer", 10, [5], ["ns-b/mc"]),
        ]
    )
    predictor = FixedPredictor({"ns-a/mc": [1], "ns-b/mc": [1]})
    sub = dynamic_sub(priority=10)
    decision = await schedule(framework(predictor, handle=others), sub, clusters, inventory(sub, 5), None)
    assert decision.preempted == ["app/lowest"], "3 freed on ns-a cover the 3 missing"
    assert decision.binding.replicas == {WEB_KEY: [4, 1]}
    assert decision.unscheduled == {} and decision.failure is None
    assert decision.predictions == {"ns-a/mc": [1], "ns-b/mc": [1]}, "what the predictor said, before preemption"


async def test_preemption_needs_priority_and_the_policy() -> None:
    clusters = [build_cluster("ns-a")]
    others = Others([holder("low", None, [3], ["ns-a/mc"])])
    for spec in ({"priority": 5, "preemptionPolicy": "PreemptNever"}, {}):
        sub = dynamic_sub(**spec)
        predictor = FixedPredictor({"ns-a/mc": [1]})
        decision = await schedule(framework(predictor, handle=others), sub, clusters, inventory(sub, 3), None)
        assert decision.preempted == []
        assert decision.unscheduled == {WEB_KEY: 2}




def example(path: str) -> Subscription:
    (sub,) = [obj for obj in load_path(compat.compat_path(compat.EXAMPLES, path)) if isinstance(obj, Subscription)]
    return sub


async def test_clusternets_dynamic_dividing_example_divides_by_predicted_room() -> None:
    sub = example("dynamic-dividing-scheduling/subscription.yaml")
    clusters = [build_cluster(f"ns-{n}", labels={"clusters.clusternet.io/cluster-id": n}) for n in "abc"]
    predictor = FixedPredictor({"ns-a/mc": [None, None, 3], "ns-b/mc": [None, None, 6], "ns-c/mc": [None, None, 9]})
    decision = await schedule(framework(predictor), sub, clusters, inventory(sub, None, None, 6), None)
    assert decision.binding.replicas["apps/v1/Deployment/qux/my-nginx"] == [1, 2, 3]
    assert decision.binding.replicas["v1/Service/qux/my-nginx-svc"] == []


async def test_clusternets_subgroup_example_picks_one_cluster_per_region_then_divides() -> None:
    sub = example("scheduling-group/subscription-dynamic-dividing.yaml")
    regions = {"a": "ap-shanghai", "b": "ap-shanghai", "c": "ap-beijing", "d": "ap-beijing"}
    clusters = [build_cluster(f"ns-{n}", labels={"region": region}) for n, region in regions.items()]
    room = {f"ns-{n}/mc": [None, None, 4 if n == "a" else 2] for n in regions}
    decision = await schedule(framework(FixedPredictor(room)), sub, clusters, inventory(sub, None, None, 6), None)
    assert decision.binding.binding_clusters == ["ns-a/mc", "ns-c/mc"]
    assert decision.binding.replicas["apps/v1/Deployment/qux/my-nginx"] == [4, 2]

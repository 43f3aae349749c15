"""What the scheduler tells users beside a decision (the Scheduled condition, unplaced replicas,
the predictor's figures), whatever path the decision took."""

from __future__ import annotations

from collections.abc import Callable

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.scheduler.reconciler import SubscriptionScheduler, shortfall

from tests.scheduler.conftest import build_inventory

WEB = "apps/v1/Deployment/ns/web"
CM = "v1/ConfigMap/ns/cm"
FEEDS = [
    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "ns"},
    {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "ns"},
]


def binding(clusters: list[str], web: list[int]) -> SubscriptionBinding:
    replicas = {WEB: web, CM: []}
    return SubscriptionBinding(subscription_uid="u", spec_hash=1, binding_clusters=clusters, replicas=replicas)


def test_what_a_binding_lacks_is_unplaced_but_an_undivided_feed_lacks_nothing(
    make_sub: Callable[..., Subscription],
) -> None:
    finv = build_inventory(make_sub("s", "ns", [], feeds=FEEDS), [20, None])
    assert shortfall(binding(["a/mc", "b/mc"], [4, 10]), finv) == {WEB: 6}
    assert shortfall(binding(["a/mc", "b/mc"], [10, 10]), finv) == {}
    assert shortfall(binding(["a/mc"], []), finv) == {}, "static dividing with no weight divides nothing"


def test_a_failed_division_that_keeps_what_was_placed_is_partially_scheduled(
    make_sub: Callable[..., Subscription],
) -> None:
    finv = build_inventory(make_sub("s", "ns", [], feeds=FEEDS), [20, None])
    figures = SubscriptionScheduler._with_figures
    kept = figures(binding(["a/mc", "b/mc"], [4, 10]), "web: no room", None, {}, finv, {"a/mc": [1, None]})
    assert kept.condition is not None
    assert (kept.condition.status, kept.condition.reason, kept.condition.message) == (
        "False",
        "PartiallyScheduled",
        "web: no room",
    )
    assert kept.unscheduled_replicas == {WEB: 6}
    assert kept.predicted_replicas == {WEB: [1, None]}, "per divided feed, in bindingClusters order"

    placed = figures(binding(["a/mc", "b/mc"], [10, 10]), None, None, {}, finv, {})
    assert placed.condition is not None and (placed.condition.status, placed.condition.reason) == ("True", "Scheduled")
    assert placed.condition.message == "bound to 2 cluster(s)"
    later = figures(binding(["a/mc", "b/mc"], [10, 10]), None, placed, {}, finv, {})
    assert later.condition == placed.condition, "the transition time holds while the status does"

    nothing = figures(binding([], []), "0/2 clusters are available: 2 x.", None, {}, finv, {})
    assert nothing.condition is not None and nothing.condition.reason == "Unschedulable"

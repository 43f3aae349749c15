"""One rule for which object a feed names, and every service that asks it agrees.

Each case is a feed and the object a user applies for it (through `cnet`, whose loader makes the
Manifest as Clusternet's shadow API would). The scheduler must find that Manifest for the feed's
replicas, the deployer must render it with the replicas the scheduler keyed by the feed, the
status aggregation must credit the applied object to the feed, and the bridge must mirror the
parent object into that same Manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from clusternet_nats.api.apps import (
    DescriptionPhase,
    DescriptionStatus,
    FeedInventory,
    Localization,
    Manifest,
    ManifestStatus,
    Subscription,
)
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import Feed
from clusternet_nats.bridge.feeds import FeedRef
from clusternet_nats.deployer.descriptions import Target, render_generic
from clusternet_nats.deployer.status import Release, aggregate
from clusternet_nats.domain.feeds import (
    Selector,
    chart_feed,
    feed_key,
    feed_selector,
    format_feed,
    is_chart_feed,
    manifest_selectors,
    names_object,
)
from clusternet_nats.domain.replicas import feed_order
from clusternet_nats.kube.discovery import Resource
from clusternet_nats.scheduler.framework.interfaces import CycleState, TargetClusters
from clusternet_nats.scheduler.plugins.static_assigner import StaticAssigner
from clusternet_nats.store import object_key

CLUSTER_ID = "11111111-1111-4111-8111-111111111111"


@dataclass(frozen=True)
class Case:
    feed: dict[str, Any]
    applied: dict[str, Any]
    resource: Resource
    """What the parent's discovery reports for the kind (the bridge's view of its scope)."""
    key: str
    """Clusternet's GetFeedKey of the feed."""
    namespace: str | None
    """The namespace of the object the feed names."""


def deployment(name: str, namespace: str | None, replicas: int = 3) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {"replicas": replicas}}


DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", namespaced=True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
WIDGETS = Resource("example.com/v1", "Widget", "widgets", namespaced=True)

CASES = {
    "namespaced": Case(
        {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
        deployment("web", "shop"),
        DEPLOYMENTS,
        "apps/v1/Deployment/shop/web",
        "shop",
    ),
    "namespace-less, namespaced kind": Case(
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        deployment("web", None),
        DEPLOYMENTS,
        "apps/v1/Deployment/web",
        "default",
    ),
    "cluster-scoped": Case(
        {"apiVersion": "v1", "kind": "Namespace", "name": "shop"},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        NAMESPACES,
        "v1/Namespace/shop",
        None,
    ),
    "cluster-scoped kind given a namespace": Case(
        {"apiVersion": "v1", "kind": "Namespace", "namespace": "default", "name": "shop"},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        NAMESPACES,
        "v1/Namespace/default/shop",
        None,
    ),
    "namespace-less, kind of unknown scope": Case(
        {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"},
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}},
        WIDGETS,
        "example.com/v1/Widget/w",
        None,
    ),
}


def manifest_of(case: Case) -> Manifest:
    manifest = parse_object(case.applied)
    assert isinstance(manifest, Manifest)
    return manifest


def subscription(*feeds: dict[str, Any]) -> Subscription:
    sub = parse_object(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "s", "namespace": "default", "uid": "u1"},
            "spec": {
                "schedulingStrategy": "Dividing",
                "dividingScheduling": {"type": "Static"},
                "subscribers": [{"clusterAffinity": {}, "weight": 1}],
                "feeds": list(feeds),
            },
        }
    )
    assert isinstance(sub, Subscription)
    return sub


def cluster(name: str) -> ManagedCluster:
    return ManagedCluster.model_validate(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ManagedCluster",
            "metadata": {"name": name, "namespace": f"clusternet-{name}"},
            "spec": {"clusterId": CLUSTER_ID, "syncMode": "Pull"},
        }
    )


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_every_service_finds_the_same_object_for_a_feed(case: Case) -> None:
    feed = Feed.model_validate(case.feed)
    manifest = manifest_of(case)
    assert feed_key(feed) == case.key
    assert feed_selector(feed).namespace == case.namespace
    assert feed_selector(feed) in manifest_selectors(manifest)

    # FeedInventory controller: the Manifest the feed selects gives its replicas, which the scheduler divides
    replicas = feed_order(feed, manifest.template).desired_replicas
    assert replicas == (3 if case.applied["kind"] == "Deployment" else None)

    # scheduler -> deployer: the replicas the scheduler keys by the feed are the ones rendered
    sub = subscription(case.feed)
    finv = FeedInventory.new(sub.name, sub.namespace, spec={"feeds": [{**case.feed, "desiredReplicas": replicas}]})
    state = CycleState(sub, finv, None, candidates=[cluster("a")])
    placed, _ = StaticAssigner().assign(state, TargetClusters([cluster("a").namespaced_name()]))
    assigned = placed.replicas
    assert list(assigned) == [case.key]
    share = {key: shares[0] for key, shares in assigned.items() if shares}
    spec = render_generic([(feed, manifest)], Target("clusternet-a", {}, sub, replicas=share))
    rendered = json.loads(spec.raw[0])
    assert rendered.get("spec", {}).get("replicas") == replicas
    assert rendered["metadata"].get("namespace") == manifest.template["metadata"].get("namespace")

    # agent -> deployer status: the object applied from the Manifest reports for the feed
    applied = ManifestStatus(
        api_version=rendered["apiVersion"],
        kind=rendered["kind"],
        namespace=rendered["metadata"].get("namespace"),
        name=rendered["metadata"]["name"],
    )
    assert names_object(feed, applied)
    status = DescriptionStatus(phase=DescriptionPhase.SUCCESS, manifest_statuses=[applied])
    summary = aggregate([feed], [Release(CLUSTER_ID, "a", [status])]).aggregated_statuses or []
    assert [s.feed_status_summary.available for s in summary if s.feed_status_summary] == [True]

    # bridge: the parent object it mirrors for the feed becomes that same Manifest
    ref = FeedRef.of(feed)
    assert ref.manifest(case.resource) == (manifest.namespace, manifest.name)
    expected = manifest.template["metadata"].get("namespace") if case.resource.namespaced else None
    assert ref.object_key(case.resource) == object_key(expected, feed.name)


def test_a_namespace_less_feed_of_a_namespaced_kind_means_default_only() -> None:
    feed = Feed(api_version="apps/v1", kind="Deployment", name="web")
    elsewhere = manifest_of(Case({}, deployment("web", "shop"), DEPLOYMENTS, "", None))
    assert feed_selector(feed) not in manifest_selectors(elsewhere), "the FeedInventory controller finds no Manifest"
    assert not names_object(feed, Feed(api_version="apps/v1", kind="Deployment", namespace="shop", name="web"))
    assert feed_selector(feed) == Selector("apps/v1", "Deployment", "default", "web")


def test_a_namespace_less_feed_of_unknown_scope_selects_any_namespace() -> None:
    """Clusternet's selector leaves the namespace out; its FeedInventory reads the first match."""
    feed = Feed(api_version="example.com/v1", kind="Widget", name="w")
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "zeta"}}
    manifest = parse_object(widget)
    assert isinstance(manifest, Manifest)
    assert feed_selector(feed) in manifest_selectors(manifest), "found in whatever namespace"
    assert feed_order(feed, manifest.template).desired_replicas is None, "and not a workload"
    zeta = Feed(api_version="example.com/v1", kind="Widget", namespace="zeta", name="w")
    assert names_object(feed, zeta)
    assert not names_object(Feed(api_version="example.com/v1", kind="Widget", namespace="alpha", name="w"), zeta)


def test_an_override_for_a_namespace_less_feed_applies_to_the_object_in_default() -> None:
    loc = Localization.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Localization",
            "metadata": {"name": "l", "namespace": "clusternet-a"},
            "spec": {
                "feed": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "overrides": [{"name": "o", "type": "MergePatch", "value": '{"metadata":{"labels":{"x":"y"}}}'}],
            },
        }
    )
    manifest = manifest_of(CASES["namespace-less, namespaced kind"])
    sub = subscription(CASES["namespace-less, namespaced kind"].feed)
    target = Target("clusternet-a", {}, sub, localizations=[loc])
    feed = Feed.model_validate(CASES["namespace-less, namespaced kind"].feed)
    rendered = json.loads(render_generic([(feed, manifest)], target).raw[0])
    assert rendered["metadata"]["labels"] == {"x": "y"}


def test_feed_key_and_format_feed_are_clusternets() -> None:
    namespaced = Feed(api_version="apps/v1", kind="Deployment", namespace="qux", name="web")
    cluster_scoped = Feed(api_version="v1", kind="Namespace", name="qux")
    assert (feed_key(namespaced), format_feed(namespaced)) == ("apps/v1/Deployment/qux/web", "Deployment qux/web")
    assert (feed_key(cluster_scoped), format_feed(cluster_scoped)) == ("v1/Namespace/qux", "Namespace qux")


def test_a_chart_feed_without_a_namespace_names_the_chart_in_default() -> None:
    feed = Feed(api_version="apps.clusternet.io/v1alpha1", kind="HelmChart", name="redis")
    assert is_chart_feed(feed)
    assert feed_selector(feed) == feed_selector(chart_feed("default", "redis"))

"""Builders for the objects scheduler tests place: clusters with labels and taints, Subscriptions."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.clusters import ManagedCluster


def build_cluster(
    namespace: str, name: str = "mc", labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> ManagedCluster:
    return ManagedCluster.model_validate(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ManagedCluster",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"clusterId": str(uuid.uuid4()), "syncMode": "Pull", "taints": taints or []},
        }
    )


def build_subscription(
    name: str, namespace: str, subscribers: list[dict[str, Any]], feeds: list[dict[str, str]] | None = None, **spec: Any
) -> Subscription:
    return Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
            "spec": {
                "subscribers": subscribers,
                "feeds": feeds or [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": namespace}],
                **spec,
            },
        }
    )


def build_inventory(
    sub: Subscription, desired: list[int | None], requirements: dict[str, Any] | None = None
) -> FeedInventory:
    """The FeedInventory of a Subscription's feeds, as the FeedInventory controller writes it
    (`requirements`: every feed's replicaRequirements)."""
    extra = {"replicaRequirements": requirements} if requirements else {}
    feeds = [
        {**feed.to_json_dict(), "desiredReplicas": replicas, **extra}
        for feed, replicas in zip(sub.spec.feeds, desired, strict=True)
    ]
    return FeedInventory.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "FeedInventory",
            "metadata": {"name": sub.name, "namespace": sub.namespace},
            "spec": {"feeds": feeds},
        }
    )


@pytest.fixture
def make_cluster() -> Callable[..., ManagedCluster]:
    return build_cluster


@pytest.fixture
def make_sub() -> Callable[..., Subscription]:
    return build_subscription

"""Builders for the objects scheduler tests place (clusters with labels and taints, Subscriptions,
FeedInventories), and the stores a test writes through and waits on."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import BINDINGS_BUCKET, ObjectStore, StatusStore, list_events, object_key
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext


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


class Stores:
    """The stores a test writes through, and the binding it waits for."""

    def __init__(self, js: JetStreamContext) -> None:
        self.js = js
        self.clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind("ManagedCluster"))
        self.subs: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
        self.inventories: ObjectStore[FeedInventory] = ObjectStore(js, by_kind("FeedInventory"))
        self.bindings = StatusStore(js, BINDINGS_BUCKET, SubscriptionBinding)

    async def binding(self, sub: Subscription) -> SubscriptionBinding | None:
        found = await self.bindings.get(object_key(sub.namespace, sub.name))
        return None if found is None else found.value

    async def wait_bound(self, sub: Subscription, clusters: list[str]) -> SubscriptionBinding:
        async def bound() -> SubscriptionBinding | None:
            binding = await self.binding(sub)
            return binding if binding is not None and binding.binding_clusters == clusters else None

        return await eventually(bound, 10, what=f"{sub.name} bound to {clusters}")

    async def unbound(self, sub: Subscription) -> bool:
        return await self.binding(sub) is None

    async def unbound_clusters(self, sub: Subscription) -> bool:
        binding = await self.binding(sub)
        return binding is None or not binding.binding_clusters

    async def draining(self, sub: Subscription) -> SubscriptionBinding | None:
        binding = await self.binding(sub)
        return binding if binding is not None and binding.draining_clusters else None

    async def unplaced(self, sub: Subscription) -> SubscriptionBinding | None:
        binding = await self.binding(sub)
        return binding if binding is not None and binding.unscheduled_replicas else None

    async def replicas(self, sub: Subscription, replicas: dict[str, list[int]]) -> bool:
        binding = await self.binding(sub)
        return binding is not None and binding.replicas == replicas

    async def events(self, sub: Subscription, reason: str) -> list[str]:
        found = await list_events(self.js, "Subscription", sub.namespace, sub.name)
        return [event.message for event in found if event.reason == reason]


@pytest.fixture
def hub(js: JetStreamContext) -> Stores:
    return Stores(js)


def selecting(ns: str, **labels: str) -> list[dict[str, Any]]:
    return [{"clusterAffinity": {"matchLabels": {"test": ns, **labels}}}]


@pytest.fixture
def make_cluster() -> Callable[..., ManagedCluster]:
    return build_cluster


@pytest.fixture
def make_sub() -> Callable[..., Subscription]:
    return build_subscription

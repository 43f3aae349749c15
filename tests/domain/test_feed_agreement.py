"""The scheduler, the deployer and an agent agree on what each feed names, running for real.

A real nats-server, the scheduler and deployer services and one simulated cluster. One Dividing
Subscription names a namespaced Deployment, a Deployment without a namespace (applied, as with
kubectl, into "default") and a cluster-scoped Namespace. The scheduler must divide both
Deployments (it used to refuse the namespace-less one), the deployer must render each object with
the replicas keyed by its feed, and the aggregated status must show every feed available.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.apps import Subscription, SubscriptionStatus
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.registry import by_kind
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.hub.feedinventory import FeedInventoryController
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.scheduler.service import build as build_scheduler
from clusternet_nats.store import BINDINGS_BUCKET, ObjectStore, StatusStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

FEEDS = [
    {"apiVersion": "v1", "kind": "Namespace", "name": "shop"},
    {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
]
KEYS = {"v1/Namespace/shop": [], "apps/v1/Deployment/shop/web": [4], "apps/v1/Deployment/api": [2]}


async def build_feed_inventories(ctx: ServiceContext) -> None:
    """The hub's FeedInventory controller alone: the scheduler divides what it writes."""
    FeedInventoryController(ctx)


def deployment(name: str, replicas: int, namespace: str | None = None) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }


OBJECTS = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    deployment("web", 4, "shop"),
    deployment("api", 2),
]


def subscription(name: str) -> KubeObject:
    return parse_object(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "schedulingStrategy": "Dividing",
                "dividingScheduling": {"type": "Static"},
                "subscribers": [{"clusterAffinity": {}, "weight": 1}],
                "feeds": FEEDS,
            },
        }
    )


async def test_scheduler_deployer_and_status_agree_on_every_kind_of_feed(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    agent = Agent(AgentOptions(cluster_name=f"feeds-{uuid.uuid4().hex[:6]}", report_frequency=5.0))
    manifests: ObjectStore[KubeObject] = ObjectStore(private_js, by_kind("Manifest"))
    subs: ObjectStore[KubeObject] = ObjectStore(private_js, by_kind(Subscription.KIND))
    bindings = StatusStore(private_js, BINDINGS_BUCKET, SubscriptionBinding)
    statuses = StatusStore(private_js, "subscriptions-status", SubscriptionStatus)
    async with contextlib.AsyncExitStack() as stack:
        services = (
            ("clusternet-feedinventory", build_feed_inventories),
            ("clusternet-scheduler", build_scheduler),
            ("clusternet-deployer", build_deployer),
        )
        for name, build in services:
            await stack.enter_async_context(running_service(name, build, private_nats.url))
        await stack.enter_async_context(running_service("agent", agent.build, private_nats.url))
        for obj in OBJECTS:
            await manifests.create(parse_object(obj))
        sub = await subs.create(subscription("feeds"))
        key = subs.key_of(sub)

        async def divided() -> SubscriptionBinding | None:
            found = await bindings.get(key)
            return found.value if found is not None and found.value.replicas == KEYS else None

        binding = await eventually(divided, 20, what="every feed divided under its GetFeedKey")
        assert len(binding.binding_clusters) == 1

        async def available() -> SubscriptionStatus | None:
            found = await statuses.get(key)
            status = found.value if found is not None else None
            aggregated = (status.aggregated_statuses or []) if status else []
            summaries = [a.feed_status_summary for a in aggregated]
            ready = len(summaries) == len(FEEDS) and all(s is not None and s.available for s in summaries)
            return status if ready and status is not None and status.completed_releases == 1 else None

        status = await eventually(available, 30, what="every feed available in the aggregated status")
        assert [(a.kind, a.namespace, a.name) for a in status.aggregated_statuses or []] == [
            (f["kind"], f.get("namespace"), f["name"]) for f in FEEDS
        ]
        sim = agent.clusters[0].backend
        assert isinstance(sim, SimCluster)
        observed = await sim.observed_status(ObjectRef("apps/v1", "Deployment", "default", "api"))
        assert observed is not None and observed.get("replicas") == 2, observed

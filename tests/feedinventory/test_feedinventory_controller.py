"""The hub's FeedInventory controller on a real nats-server (a private one: it reconciles every
Subscription it sees): written from the Subscription's feeds and the Manifests they name,
rewritten when either changes, recreated when deleted, deleted with its Subscription."""

from __future__ import annotations

from typing import Any

from clusternet_nats.api.apps import FeedInventory, Manifest, Subscription
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.hub.feedinventory import FeedInventoryController
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, ensure_buckets, list_events
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS

NS = "demo"


async def build(ctx: ServiceContext) -> None:
    FeedInventoryController(ctx)


def deployment(name: str, replicas: int, cpu: str) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "resources": {"limits": {"cpu": cpu, "memory": "64Mi"}}}
    pod = {"nodeSelector": {"disk": "ssd"}, "containers": [container]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "template": {"spec": pod}},
    }


def subscription(feeds: list[dict[str, str]], strategy: str = "Replication") -> Subscription:
    return Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "app", "namespace": NS},
            "spec": {"subscribers": [{"clusterAffinity": {}}], "schedulingStrategy": strategy, "feeds": feeds},
        }
    )


def feed(kind: str, name: str, api_version: str = "apps/v1") -> dict[str, str]:
    return {"apiVersion": api_version, "kind": kind, "namespace": NS, "name": name}


async def test_feed_inventory_follows_subscription_and_manifests(private_nats: NatsServer) -> None:
    nc = NATS()
    await nc.connect(private_nats.url)
    js = nc.jetstream()
    await ensure_buckets(js)
    subs: ObjectStore[Subscription] = ObjectStore(js, KindInfo.of(Subscription))
    manifests: ObjectStore[Manifest] = ObjectStore(js, KindInfo.of(Manifest))
    inventories: ObjectStore[FeedInventory] = ObjectStore(js, KindInfo.of(FeedInventory))

    web = parse_object(deployment("web", 3, "500m"))
    config = parse_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": NS}})
    assert isinstance(web, Manifest) and isinstance(config, Manifest)
    await manifests.create(web)
    await manifests.create(config)
    sub = await subs.create(subscription([feed("ConfigMap", "cfg", "v1"), feed("Deployment", "web")]))

    async def inventory(check: Any = lambda finv: True) -> FeedInventory | None:
        finv = await inventories.get(NS, "app")
        return finv if finv is not None and check(finv) else None

    async with running_service("hub-feedinventory", build, private_nats.url):
        finv = await eventually(inventory, 10, what="the FeedInventory")
        assert finv.metadata.labels == {
            "clusternet.io/created-by": "clusternet-hub",
            "apps.clusternet.io/subs.name": "app",
            "apps.clusternet.io/subs.namespace": NS,
            "apps.clusternet.io/subs.uid": sub.metadata.uid,
        }
        owner = (finv.metadata.owner_references or [])[0]
        assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Subscription", "app", sub.metadata.uid, True)
        cfg_order, web_order = finv.spec.feeds
        assert (cfg_order.kind, cfg_order.desired_replicas, cfg_order.replica_requirements) == ("ConfigMap", None, None)
        assert (web_order.desired_replicas, web_order.replica_json_path) == (3, "/spec/replicas")
        requirements = web_order.replica_requirements
        assert requirements is not None and requirements.resources is not None
        assert requirements.resources.requests == {"cpu": "500m", "memory": "64Mi"}
        assert requirements.node_selector == {"disk": "ssd"}

        # The Manifest changes: so does the FeedInventory.
        scaled = parse_object(deployment("web", 5, "1"))
        assert isinstance(scaled, Manifest)
        await manifests.apply(scaled)
        finv = await eventually(
            lambda: inventory(lambda f: f.spec.feeds[1].desired_replicas == 5), 10, what="5 replicas"
        )
        resources = finv.spec.feeds[1].replica_requirements
        assert resources is not None and resources.resources is not None
        assert resources.resources.requests == {"cpu": "1", "memory": "64Mi"}

        # Deleted by someone: written again.
        await inventories.delete(NS, "app")
        await eventually(inventory, 10, what="the FeedInventory recreated")

        # A feed without a Manifest: the FeedInventory stays, a Warning says why.
        current = await subs.require(NS, "app")
        current.spec.feeds.append(subscription([feed("Deployment", "api")]).spec.feeds[0])
        await subs.update(current)

        async def warned() -> list[str]:
            events = await list_events(js, "Subscription", NS, "app")
            return [e.message or "" for e in events if e.reason == "UnParseableFeeds"]

        messages = await eventually(warned, 10, what="an UnParseableFeeds warning")
        assert "Deployment demo/api not found: no Manifest in clusternet-reserved holds it" in messages[0]
        assert len((await inventories.require(NS, "app")).spec.feeds) == 2

        api = parse_object(deployment("api", 2, "250m"))
        assert isinstance(api, Manifest)
        await manifests.create(api)
        finv = await eventually(lambda: inventory(lambda f: len(f.spec.feeds) == 3), 10, what="the third feed")
        assert finv.spec.feeds[2].desired_replicas == 2

        # Only a ConfigMap left (Replication): no replicas, no FeedInventory; as Dividing: one, as Clusternet.
        current = await subs.require(NS, "app")
        current.spec.feeds = current.spec.feeds[:1]
        await subs.update(current)

        async def gone() -> bool:
            return await inventories.get(NS, "app") is None

        await eventually(gone, 10, what="the FeedInventory deleted")
        current = await subs.require(NS, "app")
        current.spec.scheduling_strategy = subscription([], "Dividing").spec.scheduling_strategy
        await subs.update(current)
        finv = await eventually(inventory, 10, what="a Dividing Subscription's FeedInventory")
        assert [order.kind for order in finv.spec.feeds] == ["ConfigMap"]

        # The Subscription goes: so does its FeedInventory.
        await subs.delete(NS, "app")
        await eventually(gone, 10, what="the FeedInventory deleted with its Subscription")
    await nc.close()

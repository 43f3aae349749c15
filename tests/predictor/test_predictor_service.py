"""The predictor in-process against a real NATS: node inventories, reservations from bindings
not yet running, the batch, per-cluster and unscheduled requests, and its cache following change."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from clusternet_nats.api.apps import (
    Description,
    DescriptionStatus,
    FeedInventory,
    ManifestStatus,
    ReplicaRequirements,
)
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory, NodeInventoryItem
from clusternet_nats.api.predictor import (
    AccommodationReply,
    AccommodationRequest,
    ClusterPrediction,
    PredictReply,
    PredictRequest,
    UnscheduledReplicas,
    UnscheduledReply,
    UnscheduledRequest,
)
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.predictor.messages import PREDICT_SUBJECT, UNSCHEDULED_SUBJECT, accommodation_subject
from clusternet_nats.predictor.service import build
from clusternet_nats.store import BINDINGS_BUCKET, ObjectStore, StatusStore, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.js import JetStreamContext

FEED = "apps/v1/Deployment/demo/web"
KIND = {"apiVersion": "apps.clusternet.io/v1alpha1"}


def shape(cpu: str, **more: object) -> ReplicaRequirements:
    return ReplicaRequirements.model_validate({"resources": {"requests": {"cpu": cpu}}, **more})


def nodes(count: int) -> list[NodeInventoryItem]:
    size = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    return [NodeInventoryItem(name=f"n{i}", allocatable=size) for i in range(count)]


async def predict(nc: NATS, clusters: list[str], *feeds: ReplicaRequirements | None) -> PredictReply | None:
    request = PredictRequest(clusters=clusters, feeds=list(feeds))
    try:
        msg = await nc.request(PREDICT_SUBJECT, request.to_json(), timeout=2)
    except NoRespondersError:
        return None
    return PredictReply.model_validate_json(msg.data)


async def test_predicts_from_nodes_and_reservations(
    nats_server: NatsServer, nc: NATS, js: JetStreamContext, unique_ns: str
) -> None:
    edge, key = f"{unique_ns}/edge", object_key(unique_ns, "edge")
    inventories = StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory)
    revision = await inventories.put(key, NodeInventory(cluster_id=f"id-{unique_ns}", nodes=nodes(3)), 0)

    async with running_service("clusternet-predictor", build, nats_server.url):
        clusters = [edge, f"{unique_ns}/nowhere"]
        reply = await eventually(lambda: predict(nc, clusters, shape("1500m"), None, shape("3")), 10)
        assert reply is not None
        assert reply.clusters[edge] == ClusterPrediction(replicas=[3, None, 0])
        assert reply.clusters[f"{unique_ns}/nowhere"].error == (
            f"managedcluster {unique_ns}/nowhere has reported no node inventory"
        )

        # Clusternet's error when no node matches the nodeSelector; a cluster id names the cluster too.
        by_id = await predict(nc, [f"id-{unique_ns}"], shape("1", nodeSelector={"disk": "nvme"}))
        assert by_id is not None
        assert by_id.clusters[f"id-{unique_ns}"].error == (
            f"managedcluster {edge}: no feasible nodes found: 0/3 nodes are available: "
            "3 node(s) didn't match the node selector or required node affinity"
        )
        terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0", "n1"]}]}]
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
        for _ in range(2):  # the second answer comes from the cache
            tolerant = await predict(nc, [edge], shape("1", tolerations=[{"operator": "Exists"}], affinity=affinity))
            assert tolerant is not None and tolerant.clusters[edge].replicas == [4]
        invalid = await nc.request(PREDICT_SUBJECT, b'{"clusters": "x"}', timeout=2)
        assert "invalid predict request" in (PredictReply.model_validate_json(invalid.data).error or "")

        # One cluster, one requirement: the subject names the cluster.
        ask = AccommodationRequest(requirements=shape("500m")).to_json()
        single = await nc.request(accommodation_subject(unique_ns, "edge"), ask, timeout=2)
        assert AccommodationReply.model_validate_json(single.data).max_acceptable_replicas == 12

        # Two replicas bound to edge, none running: their room is taken.
        finv = FeedInventory.model_validate(
            {
                "apiVersion": "apps.clusternet.io/v1alpha1",
                "kind": "FeedInventory",
                "metadata": {"name": "app", "namespace": unique_ns},
                "spec": {
                    "feeds": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "namespace": "demo",
                            "name": "web",
                            "desiredReplicas": 2,
                            "replicaRequirements": shape("1500m").to_json_dict(),
                            "replicaJsonPath": "/spec/replicas",
                        }
                    ]
                },
            }
        )
        inventories_store: ObjectStore[FeedInventory] = ObjectStore(js, KindInfo.of(FeedInventory))
        await inventories_store.create(finv)
        bindings = StatusStore(js, BINDINGS_BUCKET, SubscriptionBinding)
        binding = SubscriptionBinding(
            subscription_uid=f"uid-{unique_ns}", spec_hash=1, binding_clusters=[edge], replicas={FEED: [2]}
        )
        binding_revision = await bindings.put(object_key(unique_ns, "app"), binding, 0)

        async def room_for(want: int) -> bool:
            found = await predict(nc, [edge], shape("1500m"))
            return found is not None and found.clusters[edge].replicas == [want]

        await eventually(lambda: room_for(1), 10, what="two replicas reserved")
        pending = await nc.request(UNSCHEDULED_SUBJECT, UnscheduledRequest(cluster=edge).to_json(), timeout=2)
        assert UnscheduledReply.model_validate_json(pending.data).items == [
            UnscheduledReplicas(subscription=f"{unique_ns}/app", feed=FEED, replicas=2, cluster=edge)
        ]

        # One of them is ready in the cluster: only one still reserved.
        description = Description.model_validate(
            {
                "apiVersion": "apps.clusternet.io/v1alpha1",
                "kind": "Description",
                "metadata": {
                    "name": "app-abcde-generic",
                    "namespace": unique_ns,
                    "labels": {
                        "apps.clusternet.io/subs.uid": f"uid-{unique_ns}",
                        "clusters.clusternet.io/cluster-name": "edge",
                    },
                },
                "spec": {"deployer": "Generic"},
            }
        )
        descriptions: ObjectStore[Description] = ObjectStore(js, KindInfo.of(Description))
        await descriptions.create(description)
        reported = ManifestStatus(
            api_version="apps/v1", kind="Deployment", namespace="demo", name="web", observed_status={"readyReplicas": 1}
        )
        statuses = StatusStore(js, "descriptions-status", DescriptionStatus)
        status = DescriptionStatus(manifest_statuses=[reported])
        await statuses.put(object_key(unique_ns, "app-abcde-generic"), status, 0)
        await eventually(lambda: room_for(2), 10, what="one replica still reserved")

        # A node joins: the cached answer follows the new inventory revision.
        await inventories.put(key, NodeInventory(cluster_id=f"id-{unique_ns}", nodes=nodes(4)), revision)
        await eventually(lambda: room_for(3), 10, what="the fourth node counted")

        # Replicas no cluster had room for, from the bindings.
        binding.unscheduled_replicas = {FEED: 4}
        await bindings.put(object_key(unique_ns, "app"), binding, binding_revision)

        async def unplaced() -> list[UnscheduledReplicas]:
            msg = await nc.request(UNSCHEDULED_SUBJECT, b"", timeout=2)
            items = UnscheduledReply.model_validate_json(msg.data).items
            return [item for item in items if item.subscription == f"{unique_ns}/app"]

        found = await eventually(unplaced, 10, what="the unscheduled replicas")
        assert found == [UnscheduledReplicas(subscription=f"{unique_ns}/app", feed=FEED, replicas=4)]


async def test_a_reservation_holds_until_the_inventory_counts_its_pods(
    nats_server: NatsServer, nc: NATS, js: JetStreamContext, unique_ns: str
) -> None:
    """The window of issue 9: the status reports the replicas ready before the agent's next node
    inventory counts their pods. They stay reserved until that inventory counts them."""
    edge, key = f"{unique_ns}/edge", object_key(unique_ns, "edge")
    desc_key = object_key(unique_ns, "app-abcde-generic")
    inventories = StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory)
    size = {"cpu": "4", "memory": "8Gi", "pods": "110"}

    def inventory(pods: int) -> NodeInventory:
        requested = {"cpu": f"{pods * 500}m", "pods": str(pods)}
        node = NodeInventoryItem(name="n0", allocatable=size, requested=requested, pods_by_description={desc_key: pods})
        return NodeInventory(cluster_id=f"id-{unique_ns}", nodes=[node])

    revision = await inventories.put(key, inventory(0), 0)
    async with running_service("clusternet-predictor", build, nats_server.url):

        async def room_for(want: int) -> bool:
            found = await predict(nc, [edge], shape("500m"))
            return found is not None and found.clusters[edge].replicas == [want]

        async def reserved() -> int:
            msg = await nc.request(UNSCHEDULED_SUBJECT, UnscheduledRequest(cluster=edge).to_json(), timeout=2)
            return sum(item.replicas for item in UnscheduledReply.model_validate_json(msg.data).items)

        await eventually(lambda: room_for(8), 10, what="an empty node")
        order = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "demo", "name": "web"}
        feeds = [{**order, "desiredReplicas": 3, "replicaRequirements": shape("500m").to_json_dict()}]
        body = {"metadata": {"name": "app", "namespace": unique_ns}, "spec": {"feeds": feeds}}
        finv = FeedInventory.model_validate({**KIND, "kind": "FeedInventory", **body})
        await ObjectStore(js, KindInfo.of(FeedInventory)).create(finv)
        binding = SubscriptionBinding(
            subscription_uid=f"uid-{unique_ns}", spec_hash=1, binding_clusters=[edge], replicas={FEED: [3]}
        )
        await StatusStore(js, BINDINGS_BUCKET, SubscriptionBinding).put(object_key(unique_ns, "app"), binding, 0)
        await eventually(lambda: room_for(5), 10, what="three replicas reserved")

        labels = {"apps.clusternet.io/subs.uid": f"uid-{unique_ns}", "clusters.clusternet.io/cluster-name": "edge"}
        description = Description.model_validate(
            {
                **KIND,
                "kind": "Description",
                "metadata": {"name": "app-abcde-generic", "namespace": unique_ns, "labels": labels},
                "spec": {"deployer": "Generic"},
            }
        )
        await ObjectStore(js, KindInfo.of(Description)).create(description)
        reported = ManifestStatus(**order, observed_status={"readyReplicas": 3})  # type: ignore[arg-type]
        await StatusStore(js, "descriptions-status", DescriptionStatus).put(
            desc_key, DescriptionStatus(manifest_statuses=[reported]), 0
        )
        # Ready in the status, not yet in the inventory: still reserved, whatever the timing.
        await eventually(lambda: room_for(5), 10)
        await holds(lambda: room_for(5), 1.0, "the ready replicas stay reserved until the inventory counts them")
        assert await reserved() == 3

        # Two of the pods counted: the third is still reserved; all three: the inventory alone. The
        # room never changes, since every replica is counted exactly once: reserved or requested.
        revision = await inventories.put(key, inventory(2), revision)
        await eventually(lambda: _equals(reserved, 1), 10, what="two counted, one reserved")
        assert await room_for(5)
        revision = await inventories.put(key, inventory(3), revision)
        await eventually(lambda: _equals(reserved, 0), 10, what="three counted, none reserved")
        assert await room_for(5)


async def _equals(get: Callable[[], Awaitable[int]], want: int) -> bool:
    return await get() == want

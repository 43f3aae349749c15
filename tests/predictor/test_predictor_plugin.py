"""The scheduler's Predict plugin against the real predictor service on a real nats-server: one
request for every cluster and feed, None for feeds without replicas, unpredictable clusters left
out, and a clear error when no predictor answers."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory, NodeInventoryItem
from clusternet_nats.predictor.service import build
from clusternet_nats.runtime.service import CommonOptions, ServiceContext
from clusternet_nats.scheduler.framework.interfaces import PredictPlugin
from clusternet_nats.scheduler.framework.registry import PluginContext
from clusternet_nats.scheduler.plugins.predictor import PredictorError, PredictorPlugin, predictor_factory
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext


def cluster(namespace: str, name: str) -> ManagedCluster:
    return ManagedCluster.model_validate(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ManagedCluster",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterId": str(uuid.uuid4()), "syncMode": "Pull"},
        }
    )


def feed(name: str, replicas: int | None, requirements: dict[str, Any] | None) -> dict[str, Any]:
    order: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "demo", "name": name}
    if replicas is not None:
        order |= {"desiredReplicas": replicas, "replicaJsonPath": "/spec/replicas"}
    if requirements is not None:
        order["replicaRequirements"] = requirements
    return order


SUB = Subscription.model_validate(
    {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "app", "namespace": "demo"},
        "spec": {"subscribers": [{"clusterAffinity": {}}], "feeds": []},
    }
)
FINV = FeedInventory.model_validate(
    {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "FeedInventory",
        "metadata": {"name": "app", "namespace": "demo"},
        "spec": {
            "feeds": [
                feed("big", 3, {"resources": {"requests": {"cpu": "1500m"}}}),
                feed("config", None, None),
                feed("ssd", 2, {"nodeSelector": {"disk": "ssd"}, "resources": {"requests": {"cpu": "1"}}}),
                feed("crd", 2, None),
            ]
        },
    }
)


async def test_one_request_for_every_cluster_and_feed(
    nats_server: NatsServer, nc: NATS, js: JetStreamContext, unique_ns: str
) -> None:
    inventories = StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory)
    size = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    plain = [NodeInventoryItem(name=f"n{i}", allocatable=size) for i in range(3)]
    ssd = [*plain[:2], NodeInventoryItem(name="fast", allocatable=size, labels={"disk": "ssd"})]
    await inventories.put(object_key(unique_ns, "plain"), NodeInventory(cluster_id="p", nodes=plain), 0)
    await inventories.put(object_key(unique_ns, "ssd"), NodeInventory(cluster_id="s", nodes=ssd), 0)
    clusters = [cluster(unique_ns, name) for name in ("plain", "ssd", "silent")]
    plugin = PredictorPlugin(nc, timeout=2)
    assert isinstance(plugin, PredictPlugin) and plugin.name == "Predictor"

    with pytest.raises(PredictorError, match=r"no predictor answers on predictor\.predict"):
        await plugin.predict(SUB, FINV, clusters)

    async def answered() -> dict[str, list[int | None]] | None:
        try:
            return await plugin.predict(SUB, FINV, clusters)
        except PredictorError:
            return None

    async with running_service("clusternet-predictor", build, nats_server.url):
        answer = await eventually(answered, 10, what="the predictor answers")
    # "plain" has no ssd node (Clusternet: no feasible nodes), "silent" no inventory: both left out.
    assert answer == {f"{unique_ns}/ssd": [3, None, 2, None]}
    assert await plugin.predict(SUB, FINV, []) == {}


def test_factory_reads_its_args_and_needs_the_connection(nats_server: NatsServer) -> None:
    with pytest.raises(ValueError, match="needs the scheduler's NATS connection"):
        predictor_factory({}, PluginContext())
    with pytest.raises(ValueError, match="unknown args retries"):
        predictor_factory({"retries": 3}, PluginContext())
    with pytest.raises(ValueError, match="timeout: expected a positive number of seconds, got 'soon'"):
        predictor_factory({"timeout": "soon"}, PluginContext())
    service = ServiceContext("scheduler", CommonOptions(nats_url=nats_server.url), None, NATS())  # type: ignore[arg-type]
    plugin = predictor_factory({"timeout": 0.5}, PluginContext(service=service))
    assert isinstance(plugin, PredictorPlugin) and plugin.timeout == 0.5

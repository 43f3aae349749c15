"""Clusternet's HTTP predictor API on the hub's authenticated port, answered by the predictor
over NATS: `POST /replicas/predict` (header Cluster-ID, PredictorResults), `GET /replicas/unscheduled`."""

from __future__ import annotations

from typing import Any

from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory, NodeInventoryItem
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.predictor.service import build
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

VIEWER = "vera-viewer"
POLICY = {"bindings": [{"role": "view", "users": [VIEWER]}]}
REQUIREMENTS = {"resources": {"requests": {"cpu": "1500m"}}}


async def test_predict_and_unscheduled_over_http(nats_server: NatsServer, js: JetStreamContext, unique_ns: str) -> None:
    size = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    nodes = [NodeInventoryItem(name=f"n{i}", allocatable=size) for i in range(3)]
    inventory = NodeInventory(cluster_id=f"id-{unique_ns}", nodes=nodes)
    await StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory).put(object_key(unique_ns, "edge"), inventory, 0)

    async with running_hub(nats_server.url, users={VIEWER: []}, policy=POLICY) as hub, hub.session() as http:

        async def post(body: Any, cluster: str | None = f"id-{unique_ns}") -> tuple[int, dict[str, Any]]:
            headers = {"Cluster-ID": cluster} if cluster else {}
            async with http.post("/replicas/predict", json=body, headers=headers) as response:
                return response.status, await response.json()

        status, body = await post(REQUIREMENTS)
        assert (status, body["reason"]) == (503, "ServiceUnavailable")
        async with running_service("clusternet-predictor", build, nats_server.url):

            async def answered() -> dict[str, Any] | None:
                status, body = await post(REQUIREMENTS)
                return body if status == 200 else None

            assert await eventually(answered, 10, what="a prediction") == {"replicas": {"default": 3}}
            by_name = await post({"resources": {"requests": {"cpu": "3"}}}, f"{unique_ns}/edge")
            assert by_name == (200, {"replicas": {"default": 0}})

            status, body = await post({"nodeSelector": {"disk": "ssd"}})
            assert status == 500 and "no feasible nodes found: 0/3 nodes are available" in body["message"]
            status, body = await post(REQUIREMENTS, f"{unique_ns}/nowhere")
            assert status == 404
            assert body["message"] == f"managedcluster {unique_ns}/nowhere has reported no node inventory"
            status, body = await post(REQUIREMENTS, None)
            assert (status, body["message"]) == (400, "header Cluster-ID is required: the cluster to predict for")
            status, body = await post({"resources": {"requests": {"cpu": "lots"}}})
            assert status == 422 and body["details"]["causes"][0]["field"] == "resources.requests.cpu"

            async with http.get("/replicas/unscheduled", headers={"Cluster-ID": f"{unique_ns}/edge"}) as response:
                assert (response.status, await response.json()) == (200, {"items": []})
            async with http.get("/replicas/unscheduled") as response:
                assert response.status == 200 and "items" in await response.json()

            async with hub.session(VIEWER) as viewer, viewer.post("/replicas/predict", json=REQUIREMENTS) as refused:
                assert refused.status == 403

"""The predictor in-process against a real NATS: requests answered from reported allocatable."""

from __future__ import annotations

import json

from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.predictor.messages import accommodation_subject
from clusternet_nats.predictor.service import build
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.js import JetStreamContext

REQUEST = {"requirements": {"resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}}, "replicas": 3}


async def ask(nc: NATS, namespace: str, name: str, request: object = REQUEST) -> dict[str, object] | None:
    """The reply, or None while no predictor listens yet."""
    try:
        msg = await nc.request(accommodation_subject(namespace, name), json.dumps(request).encode(), timeout=2)
    except NoRespondersError:
        return None
    reply: dict[str, object] = json.loads(msg.data)
    return reply


async def test_answers_from_allocatable_and_names_unknown_clusters(
    nats_server: NatsServer, nc: NATS, js: JetStreamContext, unique_ns: str
) -> None:
    statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
    status = ManagedClusterStatus(allocatable={"cpu": "2", "memory": "1Gi", "pods": "110"})
    revision = await statuses.put(object_key(unique_ns, "edge"), status, 0)
    async with running_service("clusternet-predictor", build, nats_server.url):
        assert await eventually(lambda: ask(nc, unique_ns, "edge"), 10) == {"maxAcceptableReplicas": 4}

        status.allocatable = {"cpu": "8", "memory": "2Gi", "pods": "10"}
        await statuses.put(object_key(unique_ns, "edge"), status, revision)

        async def follows_status() -> bool:
            return await ask(nc, unique_ns, "edge") == {"maxAcceptableReplicas": 10}

        await eventually(follows_status, 10, what="the answer follows the reported allocatable")

        unknown = await ask(nc, unique_ns, "nowhere")
        assert unknown == {"error": f"managedcluster {unique_ns}/nowhere not found: it has reported no status"}
        invalid = await ask(nc, unique_ns, "edge", {"requirements": {"resources": {"requests": {"cpu": "lots"}}}})
        assert invalid is not None
        assert "invalid accommodation request" in str(invalid["error"])

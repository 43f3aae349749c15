"""Reads show status written by controllers into their own buckets, and the events of objects."""

from __future__ import annotations

import aiohttp
from clusternet_nats.api import Subscription
from clusternet_nats.api.apps import AggregatedStatus, SubscriptionStatus
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.store import BINDINGS_BUCKET, EventRecorder, StatusStore, object_key
from nats.js import JetStreamContext

from .objects import subs_path, subscription


async def test_subscription_status_merges_binding_and_aggregate(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns)) as resp:
        uid = (await resp.json())["metadata"]["uid"]
    key = object_key(unique_ns, "demo")
    binding = SubscriptionBinding(
        subscription_uid=uid,
        spec_hash=42,
        binding_clusters=["clusternet-abcde/c1"],
        replicas={"apps/v1/Deployment/x/web": [3]},
        desired_releases=1,
    )
    await StatusStore(js, BINDINGS_BUCKET, SubscriptionBinding).put(key, binding, 0)
    aggregated = SubscriptionStatus(
        completed_releases=1,
        aggregated_statuses=[AggregatedStatus(api_version="apps/v1", kind="Deployment", name="web")],
    )
    await StatusStore(js, "subscriptions-status", SubscriptionStatus).put(key, aggregated, 0)

    async with http.get(subs_path(unique_ns, "demo")) as resp:
        status = (await resp.json())["status"]
    assert status["bindingClusters"] == ["clusternet-abcde/c1"]
    assert status["specHash"] == 42 and status["desiredReleases"] == 1 and status["completedReleases"] == 1
    assert status["replicas"] == {"apps/v1/Deployment/x/web": [3]}
    assert status["aggregatedStatuses"][0]["kind"] == "Deployment"
    async with http.get(subs_path(unique_ns)) as resp:
        assert (await resp.json())["items"][0]["status"] == status


async def test_binding_of_an_earlier_subscription_is_not_shown(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    key = object_key(unique_ns, "demo")
    stale = SubscriptionBinding(subscription_uid="someone-else", spec_hash=1, binding_clusters=["ns/c"])
    await StatusStore(js, BINDINGS_BUCKET, SubscriptionBinding).put(key, stale, 0)
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns)) as resp:
        assert (await resp.json())["status"] == {}


async def test_events_of_one_object(http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str) -> None:
    recorder = EventRecorder(js, "pytest")
    for name, reason in (("demo", "Scheduled"), ("other", "Ignored")):
        await recorder.normal(Subscription.model_validate(subscription(unique_ns, name)), reason, "msg")
    selector = "involvedObject.kind=Subscription,involvedObject.name=demo"
    async with http.get(f"/api/v1/namespaces/{unique_ns}/events", params={"fieldSelector": selector}) as resp:
        events = (await resp.json())["items"]
    assert [e["reason"] for e in events] == ["Scheduled"]
    async with http.get("/api/v1/events", params={"fieldSelector": "involvedObject.namespace=" + unique_ns}) as resp:
        assert sorted(e["reason"] for e in (await resp.json())["items"]) == ["Ignored", "Scheduled"]
    async with http.get("/api/v1/events", params={"fieldSelector": "spec.foo=bar"}) as resp:
        assert resp.status == 400


async def test_health_and_metrics(http: aiohttp.ClientSession) -> None:
    for path in ("/healthz", "/readyz"):
        async with http.get(path) as resp:
            assert resp.status == 200, path
    async with http.get("/metrics") as resp:
        text = await resp.text()
    assert "cnet_nats_connected 1" in text
    assert 'cnet_http_requests_total{code="200",method="GET"}' in text

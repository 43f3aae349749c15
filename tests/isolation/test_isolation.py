"""Cluster A against cluster B, through a real nats-server whose every decision is our callout's.

Permission violations reach error_cb, not the caller (DESIGN §7): each test asserts both that
the forbidden thing did not happen and that the server reported the violation.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import nats.errors
import pytest
from clusternet_nats.api.registration import APPROVED, reply_prefix
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store import Informer, JsonBucket
from clusternet_nats.store.errors import IntakeRefusedError
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.registration.harness import Client, RegistrationHub, answers_hub, new_cluster_id, register

VIOLATION = "permissions violation"


@dataclass
class Cluster:
    cluster_id: str
    namespace: str
    secret: str
    client: Client
    nc: NATS


async def joined(hub: RegistrationHub) -> Cluster:
    cluster_id = new_cluster_id()
    reply, secret = await register(hub.secure.server.url, cluster_id, await hub.token())
    assert reply.result == APPROVED and reply.dedicated_namespace
    client = Client()
    nc = await client.connect(hub.secure.server.url, cluster_id, secret)
    return Cluster(cluster_id, reply.dedicated_namespace, secret, client, nc)


def bucket_of(cluster: Cluster, name: str) -> JsonBucket:
    """A bucket as the cluster sees it: direct gets of its keys, writes through the hub's intake."""
    return JsonBucket(cluster.nc.jetstream(), name, intake_of(cluster))


def intake_of(cluster: Cluster) -> IntakeClient:
    return IntakeClient(cluster.nc, cluster.cluster_id, cluster.namespace)


def violated(cluster: Cluster) -> bool:
    return any(VIOLATION in err.lower() for err in cluster.client.errors)


@pytest.fixture
async def pair(hub: RegistrationHub) -> tuple[Cluster, Cluster]:
    a, b = await joined(hub), await joined(hub)
    descriptions = JsonBucket(hub.nc.jetstream(), "descriptions")
    for cluster in (a, b):
        await descriptions.create(f"{cluster.namespace}.app", json.dumps({"for": cluster.cluster_id}).encode())
    return a, b


async def test_reads_own_descriptions_but_not_anothers(hub: RegistrationHub, pair: tuple[Cluster, Cluster]) -> None:
    a, b = pair
    own = await bucket_of(a, "descriptions").get(f"{a.namespace}.app")
    assert own is not None and json.loads(own[0]) == {"for": a.cluster_id}
    with pytest.raises(IntakeRefusedError) as refused:
        await bucket_of(a, "descriptions").get(f"{b.namespace}.app")
    assert refused.value.code == 403
    with pytest.raises(TimeoutError):  # JetStream itself: the server drops the request, no answer comes
        await asyncio.wait_for(JsonBucket(a.nc.jetstream(), "descriptions").get(f"{b.namespace}.app"), 2)
    await eventually(lambda: violated(a), timeout=5, what="permission violation reported")


async def test_informer_follows_own_namespace_only(hub: RegistrationHub, pair: tuple[Cluster, Cluster]) -> None:
    a, b = pair
    js = a.nc.jetstream()
    own: Informer[bytes] = Informer(
        a.nc, js, "descriptions", lambda _k, data, _r: data, f"{a.namespace}.>", intake=intake_of(a)
    )
    await own.start()
    try:
        await own.wait_synced(10)
        assert own.keys() == [f"{a.namespace}.app"]
    finally:
        await own.stop()
    with pytest.raises(TimeoutError):  # the server drops the request; no answer comes
        await asyncio.wait_for(
            js.add_consumer("KV_descriptions", filter_subject=f"$KV.descriptions.{b.namespace}.>"), 2
        )
    await eventually(lambda: violated(a), timeout=5, what="permission violation reported")


async def test_cannot_write_anothers_status_or_cluster(hub: RegistrationHub, pair: tuple[Cluster, Cluster]) -> None:
    a, b = pair
    await bucket_of(a, "descriptions-status").create(f"{a.namespace}.app", b'{"phase":"Success"}')
    for bucket in ("descriptions-status", "managedclusters-status", "managedclusters"):
        await a.nc.publish(f"$KV.{bucket}.{b.namespace}.app", b'{"phase":"Success"}')
    await barrier(a.nc)
    await eventually(lambda: violated(a), timeout=5, what="permission violation reported")
    hub_js = hub.nc.jetstream()
    assert await JsonBucket(hub_js, "descriptions-status").get(f"{a.namespace}.app") is not None
    for bucket in ("descriptions-status", "managedclusters-status", "managedclusters"):
        assert await JsonBucket(hub_js, bucket).get(f"{b.namespace}.app") is None


async def test_cannot_answer_anothers_requests(hub: RegistrationHub, pair: tuple[Cluster, Cluster]) -> None:
    a, b = pair
    subject = f"clusternet.proxy.{b.namespace}.get"

    def answer(text: bytes) -> Callable[[Msg], Awaitable[None]]:
        async def respond(msg: Msg) -> None:
            await msg.respond(text)

        return respond

    await b.nc.subscribe(subject, cb=answer(b"from b"))
    await a.nc.subscribe(subject, cb=answer(b"from a"))
    await a.nc.publish(f"{reply_prefix(b.namespace)}.forged", b"from a")
    await barrier(a.nc)
    await barrier(b.nc)
    await eventually(lambda: sum(VIOLATION in e.lower() for e in a.client.errors) >= 2, timeout=5, what="refusals")
    await eventually(lambda: answers_hub(hub, b.namespace, subject), timeout=10, what="B answers the hub")
    answers = {(await request_cluster(hub.nc, b.namespace, subject, b"", timeout=3)).data for _ in range(5)}
    assert answers == {b"from b"}


async def test_cannot_register_as_another(hub: RegistrationHub, pair: tuple[Cluster, Cluster]) -> None:
    # The callout refuses a token for a registered id outright, even with B's own secret in the request.
    _, b = pair
    for secret in (None, b.secret):
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await register(hub.secure.server.url, b.cluster_id, await hub.token(), secret=secret)

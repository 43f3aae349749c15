"""Issue 7, class 5: denial of service by one cluster.

Consumers per stream, the JetStream API queue, storage bytes and the events stream are shared
pools; one cluster exhausting them denies every other. A tries each, bounded in count and
time, and the outcome is measured from the hub's side: A holds at most one consumer, the
bytes it managed to store are bounded, B's Events survive A's flood, and B still creates its
consumer and reads its keys within a deadline while A floods the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import nats.errors
from clusternet_nats.api.events import Event, ObjectReference
from clusternet_nats.api.registration import intake_subject

from tests.isolation.attackers import (
    ALL_CLUSTER_BUCKETS,
    CLUSTER_WRITTEN,
    DOMAIN_API,
    FOLLOWED_STREAM,
    INTAKE_BUCKET,
    INTAKE_KEY,
    Attacker,
    consumers,
    put_description,
    stream_bytes,
    stream_messages,
)
from tests.registration.harness import RegistrationHub

CONSUMER_ATTEMPTS = 60
API_FLOOD = 20_000
STORE_ATTEMPT_BYTES = 64 * 1024 * 1024
STORE_BOUND_BYTES = 32 * 1024 * 1024
"""What one cluster may add to the hub's KV streams, at most, when it tries to add twice that."""
EVENT_FLOOD = 5_000
EVENT_BOUND = 1_000
"""Events one cluster may get stored out of a burst of EVENT_FLOOD."""
DEADLINE = 5.0
"""B's consumer create and key read, each, while A floods."""


async def test_one_consumer_per_cluster(hub: RegistrationHub, attacker: Attacker, bystander: Attacker) -> None:
    attempts = [attacker.create_consumer(f"flood-{i}") for i in range(CONSUMER_ATTEMPTS)]
    for bucket in CLUSTER_WRITTEN:
        attempts += [attacker.create_consumer(f"flood-{i}", stream=f"KV_{bucket}", bucket=bucket) for i in range(10)]
    attempts += [
        attacker.js_api(
            f"CONSUMER.CREATE.{FOLLOWED_STREAM}",
            {
                "stream_name": FOLLOWED_STREAM,
                "config": {"ack_policy": "none", "filter_subject": f"$KV.descriptions.{attacker.namespace}.>"},
            },
        )
        for _ in range(10)
    ]
    attempts.append(attacker.create_consumer())
    await asyncio.gather(*attempts)
    held = {n: f for n, f in (await consumers(hub, None)).items() if f".{attacker.namespace}." in f}
    assert len(held) <= 1, f"A holds {len(held)} consumers"
    await put_description(hub, bystander.namespace, "app")
    assert await bystander.follows_own(), "B cannot follow its Descriptions"


async def test_api_flood_does_not_starve_another(hub: RegistrationHub, attacker: Attacker, bystander: Attacker) -> None:
    """A floods every JetStream-touching request it has or had (creating its consumer, and the
    intake's `follow` and `get`, which the hub serves with JetStream calls of its own); B still
    follows its Descriptions and reads its own key within the deadline."""
    await put_description(hub, bystander.namespace, "app")
    await put_description(hub, attacker.namespace, "app")
    await attacker.create_consumer()
    body = json.dumps(
        {
            "stream_name": FOLLOWED_STREAM,
            "config": {
                "name": attacker.consumer,
                "durable_name": attacker.consumer,
                "ack_policy": "none",
                "deliver_policy": "all",
                "filter_subject": f"$KV.descriptions.{attacker.namespace}.>",
                "inactive_threshold": int(60e9),
            },
        }
    ).encode()
    create = (
        f"{DOMAIN_API}.CONSUMER.CREATE.{FOLLOWED_STREAM}.{attacker.consumer}.$KV.descriptions.{attacker.namespace}.>"
    )
    get_headers = {INTAKE_BUCKET: "descriptions", INTAKE_KEY: f"{attacker.namespace}.app"}
    sink = attacker.nc.new_inbox()
    await attacker.listen(sink + ".>")

    async def flood() -> None:
        with contextlib.suppress(nats.errors.Error):  # the hub may cut a flooding cluster off
            for i in range(API_FLOOD):
                if i % 3 == 0:
                    await attacker.nc.publish(create, body, reply=f"{sink}.{i}")
                elif i % 3 == 1:
                    await attacker.nc.publish(intake_subject(attacker.namespace, "follow"), b"{}", reply=f"{sink}.{i}")
                else:
                    await attacker.nc.publish(
                        intake_subject(attacker.namespace, "get"), b"", reply=f"{sink}.{i}", headers=get_headers
                    )
                if i % 1000 == 0:
                    await attacker.settle()
        await attacker.settle()

    flooding = asyncio.create_task(flood())
    try:
        for _ in range(3):
            started = time.monotonic()
            assert await bystander.follows_own(timeout=DEADLINE), "B could not follow its Descriptions during the flood"
            found = await bystander.read_own("descriptions", f"{bystander.namespace}.app", timeout=DEADLINE)
            assert found is not None and bystander.namespace.encode() in found, "B's read starved"
            assert time.monotonic() - started < 3 * DEADLINE
    finally:
        flooding.cancel()
        await asyncio.gather(flooding, return_exceptions=True)


async def test_storage_is_bounded_per_cluster(hub: RegistrationHub, attacker: Attacker) -> None:
    streams = [f"KV_{b}" for b in ALL_CLUSTER_BUCKETS]
    before = sum([await stream_bytes(hub, s) for s in streams])
    value = b'{"pad":"' + b"x" * (512 * 1024) + b'"}'
    count = STORE_ATTEMPT_BYTES // len(value) // 2
    timeout = 3.0 if await attacker.has_intake() else 0.1  # today's hub has no intake: do not wait on it
    for start in range(0, count, 16):
        await asyncio.gather(
            *(
                attacker.store(bucket, f"{attacker.namespace}.k{i}", value, timeout=timeout)
                for i in range(start, min(count, start + 16))
                for bucket in ("node-inventories", "managedclusters-status")
            )
        )
    grown = sum([await stream_bytes(hub, s) for s in streams]) - before
    assert grown <= STORE_BOUND_BYTES, f"A stored {grown / 2**20:.0f} MiB"
    oversized = b'{"pad":"' + b"x" * (1024 * 1024 + 1) + b'"}'
    before = sum([await stream_bytes(hub, s) for s in streams])
    await attacker.store("node-inventories", f"{attacker.namespace}.huge", oversized)
    assert sum([await stream_bytes(hub, s) for s in streams]) - before < 1024 * 1024, "A stored more than 1 MiB at once"


async def test_event_flood_is_bounded_and_keeps_others_events(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    b_subject = f"events.Description.{bystander.namespace}.app"
    await hub.nc.jetstream().publish(b_subject, b'{"reason":"BEvent"}')
    before = sum((await stream_messages(hub, "EVENTS")).values())

    def event(i: int) -> bytes:
        involved = ObjectReference(
            api_version="apps.clusternet.io/v1alpha1", kind="Description", namespace=attacker.namespace, name=f"d{i}"
        )
        return Event.about(involved, "Normal", "Flood", "x" * 512, "agent").to_json()

    intake = await attacker.has_intake()
    with contextlib.suppress(nats.errors.ConnectionClosedError):  # the hub may cut a flooding cluster off
        for start in range(0, EVENT_FLOOD, 500):
            batch = range(start, start + 500)
            for i in batch:
                await attacker.nc.publish(f"events.Description.{attacker.namespace}.d{i}", event(i))
                await attacker.nc.publish(b_subject, event(i))  # and into B's own events
            await attacker.settle()
            if intake:
                await asyncio.gather(*(attacker.intake("event", event(i)) for i in batch))
    stored = await stream_messages(hub, "EVENTS")
    assert stored.get(b_subject) == 1, "A's flood wrote into, or evicted, B's events"
    added = sum(stored.values()) - before
    assert added <= EVENT_BOUND, f"A got {added} events stored"

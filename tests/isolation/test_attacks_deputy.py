"""Beyond the issue's list: the JetStream server as A's confused deputy.

A consumer's deliveries are published by the server itself, so they pass no permission check
of A's: the reply subject of A's pull (and a push consumer's deliver subject) is any subject
A names. With its one consumer A can thus make the server publish A's own Descriptions into
B's intake, the hub's pending reply subject for a request to B, the JetStream API, or any
stream's subjects. The content is A's (hub-written) Descriptions, but whatever acts on those
subjects must not take it as B's, as an answer, or as a request; and no stream may keep it.

Each attack has its positive control: the hub's view shows A's consumer delivered.
"""

from __future__ import annotations

import asyncio

from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.msg import Msg

from tests.isolation.attackers import (
    ALL_CLUSTER_BUCKETS,
    FOLLOWED_STREAM,
    Attacker,
    delivered,
    put_description,
    seed_records,
    stream_messages,
    system_request,
    unchanged,
)
from tests.registration.harness import RegistrationHub, answers_hub

STREAMS = (*(f"KV_{b}" for b in ALL_CLUSTER_BUCKETS), "EVENTS")


async def deliver_into(hub: RegistrationHub, attacker: Attacker, target: str) -> bool:
    """A's consumer, made afresh, delivers its Descriptions with `target` as the reply subject.
    Returns whether it delivered (the hub's view)."""
    await attacker.fresh_consumer()
    await attacker.pull(target, batch=10)
    return await delivered(hub, FOLLOWED_STREAM, attacker.consumer, timeout=5)


async def counts(hub: RegistrationHub) -> dict[str, int]:
    """Messages per stream, outside A's own followed keys (whose revisions A's deliveries may bump)."""
    out = {}
    for stream in STREAMS:
        out[stream] = sum((await stream_messages(hub, stream)).values())
    return out


async def test_deliveries_store_nothing_in_other_streams(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    await put_description(hub, attacker.namespace, "own", "a-own")
    seeded = await seed_records(hub, bystander.namespace)
    await hub.nc.jetstream().publish(f"events.Description.{bystander.namespace}.precious", b'{"reason":"B"}')
    before = await counts(hub)
    targets = [f"$KV.{b}.{bystander.namespace}.precious" for b in ALL_CLUSTER_BUCKETS if b != "descriptions"]
    targets += [f"events.Description.{bystander.namespace}.precious", f"events.Description.{attacker.namespace}.x"]
    for target in targets:
        await deliver_into(hub, attacker, target)
    after = await counts(hub)
    grown = {s: after[s] - before[s] for s in STREAMS if s != FOLLOWED_STREAM and after[s] != before[s]}
    assert grown == {}, f"A's deliveries were stored in other streams: {grown}"
    assert await unchanged(hub, seeded) == {}


async def test_deliveries_into_anothers_intake_change_nothing(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    await put_description(hub, attacker.namespace, "own", "a-own")
    seeded = await seed_records(hub, bystander.namespace)
    events_before = await stream_messages(hub, "EVENTS", f"events.*.{bystander.namespace}.>")
    for verb in ("put", "delete", "event", "follow"):
        await deliver_into(hub, attacker, f"clusternet.intake.{bystander.namespace}.{verb}")
    await attacker.settle()
    assert await unchanged(hub, seeded) == {}, "A's deliveries wrote B's records through B's intake"
    assert await stream_messages(hub, "EVENTS", f"events.*.{bystander.namespace}.>") == events_before


async def test_deliveries_into_the_jetstream_api_do_nothing(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    """Found here: a pull whose reply subject is `$JS.API.STREAM.DELETE.<stream>` makes the
    server deliver A's message INTO the JetStream API, from its own trusted client, and the
    API executes it: one cluster deletes (or purges) any stream of the account."""
    await put_description(hub, attacker.namespace, "own", "a-own")
    seeded = await seed_records(hub, bystander.namespace)
    assert await bystander.follows_own(), "B follows its Descriptions"
    js = hub.nc.jetstream()

    async def intact() -> bool:
        try:
            for stream in STREAMS:
                await js.stream_info(stream)
            await js.consumer_info(FOLLOWED_STREAM, bystander.consumer)
        except Exception:
            return False  # a stream or B's consumer is gone
        return await unchanged(hub, seeded) == {}

    for api in ("$JS.API", "$JS.hub.API"):
        for op in (
            "STREAM.DELETE.KV_managedclusters",
            "STREAM.PURGE.KV_descriptions-status",
            "STREAM.PURGE.EVENTS",
            f"CONSUMER.DELETE.{FOLLOWED_STREAM}.{bystander.consumer}",
        ):
            reached = await deliver_into(hub, attacker, f"{api}.{op}")
            await holds(intact, 1.0 if reached else 0.0, f"A's delivery into {api}.{op} was executed")


async def test_deliveries_cannot_answer_the_hubs_requests_to_another(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    """The hub asks B; while B thinks, A has its Description delivered into the hub's reply
    subject (leaked through the system account). The hub's answer is B's."""
    await put_description(hub, attacker.namespace, "own", "a-own")
    subject = f"clusternet.proxy.{bystander.namespace}.get"
    release = asyncio.Event()
    asked: list[Msg] = []

    async def answer(msg: Msg) -> None:
        asked.append(msg)
        await release.wait()
        await msg.respond(b"from b")

    async def probe(msg: Msg) -> None:
        await msg.respond(b"here")

    await bystander.nc.subscribe(subject, cb=answer)
    # Subscribed after `subject` on the same link, so once the hub reaches the probe it reaches
    # `subject` too (a subscription reaches the hub's server a moment after B's took it).
    probed = f"clusternet.proxy.{bystander.namespace}.probe"
    await bystander.nc.subscribe(probed, cb=probe)
    await eventually(lambda: answers_hub(hub, bystander.namespace, probed), 10, what="B answers the hub")
    asking = asyncio.create_task(request_cluster(hub.nc, bystander.namespace, subject, b"", timeout=20))
    try:
        await eventually(lambda: asked, 10, what="B got the hub's request")
        prefix = f"clusternet.reply.{bystander.namespace}."

        async def pending_reply() -> str | None:
            data = await system_request(hub, "$SYS.REQ.SERVER.PING.CONNZ", {"subscriptions_detail": True})
            for conn in data.get("connections") or []:
                for sub in conn.get("subscriptions_list_detail") or []:
                    if sub["subject"].startswith(prefix):
                        return str(sub["subject"])
            return None

        reply = await eventually(pending_reply, 10, what="the hub's reply subject, leaked")
        await deliver_into(hub, attacker, reply)
    finally:
        release.set()
    answer_msg = await asking
    assert answer_msg.data == b"from b", f"the hub took A's delivery as B's answer: {answer_msg.data[:120]!r}"

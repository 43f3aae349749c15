"""Beyond the issue's list: reconnaissance, interception and exotic headers.

A tries what NATS lets any client try: the account-scoped `$SYS` requests (connections and
subscriptions of the whole account, the way B's inbox would leak), wildcard and queue-group
subscriptions that would intercept B's replies, requests and JetStream API traffic, forged
`$JS.ACK`/`$JS.FC` publishes, and the newer stream headers (message TTL, delete markers,
schedules, counters, atomic batches, message-id dedup) on its own keys, aimed at B's. And a
flood of bad CONNECTs (the auth callout is a shared pool) while B reconnects.
"""

from __future__ import annotations

import asyncio
import time

from clusternet_nats.api.registration import inbox_prefix
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store import JsonBucket
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.msg import Msg

from tests.isolation.attackers import (
    CLUSTER_WRITTEN,
    SHORT,
    Attacker,
    connect,
    seed_records,
    unchanged,
)
from tests.registration.harness import RegistrationHub, answers_hub

BAD_CONNECTS = 500
RECONNECT_DEADLINE = 10.0


async def test_account_system_requests_reveal_nothing(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    requests = [
        attacker.ask(subject, b'{"subscriptions": true, "subscriptions_detail": true}')
        for subject in (
            "$SYS.REQ.ACCOUNT.PING.CONNZ",
            "$SYS.REQ.ACCOUNT.PING.STATZ",
            "$SYS.REQ.ACCOUNT.CLUSTERNET.CONNZ",
            "$SYS.REQ.ACCOUNT.CLUSTERNET.SUBSZ",
            "$SYS.REQ.ACCOUNT.CLUSTERNET.JSZ",
            "$SYS.REQ.ACCOUNT.CLUSTERNET.INFO",
            "$SYS.REQ.SERVER.PING.CONNZ",
            "$SYS.REQ.SERVER.PING.JSZ",
            "$SYS.REQ.USER.INFO",
        )
    ]
    answers = [m for m in await asyncio.gather(*requests) if m is not None]
    told = [
        m.subject for m in answers if bystander.cluster_id.encode() in m.data or bystander.namespace.encode() in m.data
    ]
    assert told == [], f"A learned of B through $SYS: {told}"


async def test_wildcard_and_queue_subscriptions_intercept_nothing(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    """While the hub asks B and B reads its keys (both answered: the positive control), none of
    A's subscriptions gets B's requests, replies or JetStream API traffic."""
    subjects = [
        ">",
        "*.>",
        "_INBOX.>",
        f"{inbox_prefix(bystander.cluster_id)}.>",
        "$JS.>",
        "$JS.API.>",
        "$JS.hub.API.>",
        "$JS.ACK.>",
        "$KV.>",
        "clusternet.>",
        f"clusternet.proxy.{bystander.namespace}.>",
        f"clusternet.reply.{bystander.namespace}.>",
        f"clusternet.intake.{bystander.namespace}.>",
    ]
    got: list[list[Msg]] = []
    for subject in subjects:  # one connection each: a refused subscription must not hide the others
        spy = await connect(
            hub.secure.server.url, attacker.cluster_id, attacker.secret, inbox_prefix(attacker.cluster_id)
        )
        got.append(await spy.listen(subject))
        got.append(await spy.listen(f"clusternet.proxy.{bystander.namespace}.get", queue="b-responders"))
        await spy.settle()
    subject = f"clusternet.proxy.{bystander.namespace}.get"

    async def answer(msg: Msg) -> None:
        await msg.respond(b"from b")

    await bystander.nc.subscribe(subject, cb=answer)
    await bystander.settle()
    await eventually(lambda: answers_hub(hub, bystander.namespace, subject), timeout=10, what="B answers the hub")
    answers = [(await request_cluster(hub.nc, bystander.namespace, subject, b"ask", timeout=5)).data for _ in range(5)]
    assert answers == [b"from b"] * 5
    descriptions = JsonBucket(hub.nc.jetstream(), "descriptions")
    await descriptions.create(f"{bystander.namespace}.mine", b'{"b":"secret"}')
    assert await bystander.read_own("descriptions", f"{bystander.namespace}.mine") is not None

    def intercepted() -> list[str]:
        return [
            m.subject
            for msgs in got
            for m in msgs
            if bystander.namespace in m.subject
            or b"from b" in m.data
            or b"secret" in m.data
            or m.data == b"ask"
            or bystander.cluster_id in m.subject
        ]

    await holds(lambda: not intercepted(), SHORT, "A intercepted B's traffic")


async def test_forged_acks_and_flow_control_are_refused(hub: RegistrationHub, attacker: Attacker) -> None:
    for subject in (
        "$JS.ACK.KV_descriptions.any.1.1.1.1.0",
        "$JS.ACK.hub.x.KV_descriptions.any.1.1.1.1.0.x",
        "$JS.FC.KV_descriptions.x.y",
        "$JS.EVENT.ADVISORY.API",
        "clusternet.registration.00000000-0000-4000-8000-000000000001",
    ):
        spy = await connect(
            hub.secure.server.url, attacker.cluster_id, attacker.secret, inbox_prefix(attacker.cluster_id)
        )
        try:
            await spy.nc.publish(subject, b"+TERM")
            await spy.settle()
            await eventually(spy.violations, 5, what=f"publish to {subject} refused")
        finally:
            await spy.close()


async def test_exotic_headers_change_no_other_record(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    seeded = await seed_records(hub, bystander.namespace)
    attempts = []
    for bucket in CLUSTER_WRITTEN:
        b_subject = f"$KV.{bucket}.{bystander.namespace}.precious"
        for headers in (
            {"Nats-TTL": "1s"},
            {"Nats-Marker-Reason": "Purge"},
            {"KV-Operation": "DEL"},
            {"Nats-Schedule": "@at 1970-01-01T00:00:00Z", "Nats-Schedule-Target": b_subject},
            {"Nats-Schedule": "@every 1s", "Nats-Schedule-Target": b_subject},
            {"Nats-Incr": "1"},
            {"Nats-Batch-Id": "b1", "Nats-Batch-Sequence": "1", "Nats-Batch-Commit": "1"},
            {"Nats-Msg-Id": f"{bystander.namespace}.precious"},
            {"Nats-Expected-Stream": "KV_descriptions"},
            {"Nats-Subject": b_subject},
        ):
            attempts.append(attacker.store(bucket, f"{attacker.namespace}.x", b'{"phase":"Success"}', headers))
            attempts.append(attacker.store(bucket, f"{bystander.namespace}.precious", b'{"pwned":true}', headers))
    await asyncio.gather(*attempts)
    assert await unchanged(hub, seeded) == {}, "A's headers changed B's records"


async def test_bad_connect_flood_does_not_lock_out_a_valid_cluster(hub: RegistrationHub, bystander: Attacker) -> None:
    """Floods the auth callout with refused CONNECTs (bad secrets for B's id, malformed tokens,
    non-cluster users) while B reconnects with its own credential within a deadline."""

    async def bad(i: int) -> None:
        user, password = [
            (bystander.cluster_id, f"wrong-{i}"),
            (bystander.cluster_id, "abcdef.0123456789abcdef"),
            (f"not-a-cluster-{i}", "x"),
        ][i % 3]
        try:
            conn = await connect(hub.secure.server.url, user, password, "_INBOX_BAD")
        except Exception:
            return
        await conn.close()

    refusals = hub.callout.refusals
    flood = [asyncio.create_task(bad(i)) for i in range(BAD_CONNECTS)]
    try:
        await eventually(lambda: hub.callout.refusals >= refusals + 100, 15, what="the flood reaches the callout")
        started = time.monotonic()
        deadline = started + RECONNECT_DEADLINE
        while True:  # B's agent would retry the same way
            try:
                conn = await connect(
                    hub.secure.server.url, bystander.cluster_id, bystander.secret, inbox_prefix(bystander.cluster_id)
                )
                break
            except Exception:
                assert time.monotonic() < deadline, "B could not reconnect during the flood"
        await conn.close()
    finally:
        await asyncio.gather(*flood, return_exceptions=True)

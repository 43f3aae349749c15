"""What the store takes from nats-py and what it keeps its own of, against a real nats-server."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from clusternet_nats.store import ConflictError, Informer, JsonBucket, kv
from clusternet_nats.store.domain import api_prefix
from clusternet_nats.store.pull import ConsumerGoneError, PullReader
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, KeyValueConfig


async def test_the_api_prefix_is_the_one_nats_py_speaks_to(nc: NATS) -> None:
    """store/domain.py reads a private attribute of nats-py: this pins it."""
    assert api_prefix(nc.jetstream()) == "$JS.API"
    assert api_prefix(nc.jetstream(domain="hub")) == "$JS.hub.API"
    assert JsonBucket(nc.jetstream(), "things").write_prefix == "$KV.things."
    assert JsonBucket(nc.jetstream(domain="hub"), "things").write_prefix == "$JS.hub.API.$KV.things."


async def test_a_stale_delete_conflicts_and_a_deleted_key_is_gone(js: JetStreamContext, unique_ns: str) -> None:
    bucket = JsonBucket(js, "bindings")
    key = f"{unique_ns}.x"
    first = await bucket.create(key, b"{}")
    second = await bucket.write(key, b'{"v":2}', first)
    with pytest.raises(ConflictError):
        await bucket.delete(key, first)
    assert await bucket.get(key) == (b'{"v":2}', second)
    await bucket.create(f"{unique_ns}.y", b"{}")
    await bucket.delete(key, second)
    assert await bucket.get(key) is None
    assert await bucket.keys(f"{unique_ns}.>") == [f"{unique_ns}.y"]


async def test_markers_the_server_places_are_deletions(nc: NATS, js: JetStreamContext) -> None:
    """nats-server 2.11+ marks an aged-out key with Nats-Marker-Reason, not KV-Operation."""
    name = f"aging{uuid.uuid4().hex[:8]}"
    await js.create_key_value(KeyValueConfig(bucket=name, ttl=1.0, limit_marker_ttl=30.0))
    bucket = JsonBucket(js, name)
    informer: Informer[bytes] = Informer(nc, js, name, lambda _k, data, _r: data)
    await informer.start()
    try:
        await informer.wait_synced(5)
        await bucket.create("k", b"1")
        await eventually(lambda: informer.get("k") == b"1", 5, what="the key")

        async def marked() -> bool:
            msg = await js.get_msg(f"KV_{name}", subject=f"$KV.{name}.k")
            return bool(msg.headers) and "Nats-Marker-Reason" in (msg.headers or {})

        await eventually(marked, 15, what="the server's delete marker")
        await eventually(lambda: informer.get("k") is None, 5, what="the informer dropping the key")
        assert await bucket.entries() == [], "a marker is not a live key"
    finally:
        await informer.stop()
        await js.delete_key_value(name)


async def _consumer(js: JetStreamContext, unique_ns: str) -> tuple[str, str]:
    stream = f"pull{uuid.uuid4().hex[:8]}"
    await js.add_stream(name=stream, subjects=[f"{stream}.>"])
    info = await js.add_consumer(stream, ConsumerConfig(name=f"c-{unique_ns}", ack_policy=AckPolicy.NONE))
    assert info.name is not None
    return stream, info.name


async def test_pull_reader_asks_again_when_its_request_expires(nc: NATS, js: JetStreamContext, unique_ns: str) -> None:
    stream, consumer = await _consumer(js, unique_ns)
    requests: list[Msg] = []

    async def seen(msg: Msg) -> None:
        requests.append(msg)

    watch = await nc.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", cb=seen)
    reader = PullReader(nc, stream, consumer, batch=10, expires=1.5)
    await reader.start()
    try:
        pending = asyncio.ensure_future(reader.next())
        await eventually(lambda: len(requests) >= 2, 10, what="a second pull after the first expired (408)")
        assert not pending.done(), "an expired request is not an error"
        assert json.loads(requests[0].data) == {"batch": 10, "expires": 1_500_000_000, "idle_heartbeat": 500_000_000}
        await js.publish(f"{stream}.a", b"hello")
        (msg,) = await asyncio.wait_for(pending, 5)
        assert msg.data == b"hello"
    finally:
        await watch.unsubscribe()
        await reader.close()
        await js.delete_stream(stream)


async def test_pull_reader_reports_a_deleted_consumer(nc: NATS, js: JetStreamContext, unique_ns: str) -> None:
    stream, consumer = await _consumer(js, unique_ns)
    reader = PullReader(nc, stream, consumer, batch=10, expires=30.0)
    await reader.start()
    try:
        await js.publish(f"{stream}.a", b"first")
        assert [m.data for m in await asyncio.wait_for(reader.next(), 5)] == [b"first"]
        pending = asyncio.ensure_future(reader.next())
        await eventually(
            lambda: _waiting(js, stream, consumer), 5, what="the reader's pull lingering on the server"
        )
        await js.delete_consumer(stream, consumer)
        with pytest.raises(ConsumerGoneError, match="409"):
            await asyncio.wait_for(pending, 5)
    finally:
        await reader.close()
        await js.delete_stream(stream)


async def _waiting(js: JetStreamContext, stream: str, consumer: str) -> bool:
    return ((await js.consumer_info(stream, consumer)).num_waiting or 0) > 0


async def test_pipelined_writes_use_the_jetstream_connection(js: JetStreamContext, unique_ns: str) -> None:
    """kv.publish_pipelined reads nats-py's private `js._nc` (publish_async drops JetStream errors): this
    pins it, and that a stale write among many is a ConflictError, not a timeout."""
    assert isinstance(js._nc, NATS)
    bucket = JsonBucket(js, "bindings")
    first = await bucket.create(f"{unique_ns}.a", b"{}")
    outcomes = await bucket.write_many([(f"{unique_ns}.a", b"{}", first + 1000), (f"{unique_ns}.b", b"{}", 0)])
    assert isinstance(outcomes[0], ConflictError)
    assert outcomes[1] == (await bucket.get(f"{unique_ns}.b") or (b"", 0))[1]


async def test_pipelined_acks_may_trickle_in_but_a_stall_times_out(
    nc: NATS, js: JetStreamContext, unique_ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch waits as long as acks keep coming (a fleet's last acks took longer than the
    timeout, which failed the whole converge); WRITE_TIMEOUT with none coming ends it. A plain
    subscriber answers as JetStream would, as slowly as asked."""
    monkeypatch.setattr(kv, "WRITE_TIMEOUT", 0.4)
    subject = f"slow.{unique_ns}"
    answered = 0
    answering = 6

    async def ack(msg: Msg) -> None:
        nonlocal answered
        if answered < answering:
            answered += 1
            await asyncio.sleep(0.15)  # the slow server's pace, not a synchronisation
            await msg.respond(json.dumps({"stream": "S", "seq": answered}).encode())

    sub = await nc.subscribe(subject, cb=ack)
    try:
        outcomes = await kv.publish_pipelined(js, [(subject, b"x", {}) for _ in range(6)])
        assert outcomes == [1, 2, 3, 4, 5, 6], "0.9 s of acks, none more than 0.4 s after the last"
        answered, answering = 0, 2
        outcomes = await kv.publish_pipelined(js, [(subject, b"x", {}) for _ in range(4)])
        assert outcomes[:2] == [1, 2]
        assert all(isinstance(outcome, TimeoutError) for outcome in outcomes[2:]), outcomes
    finally:
        await sub.unsubscribe()

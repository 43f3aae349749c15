"""The informer lists, follows, and resumes after a nats-server restart without losing a change."""

import json
import time

from clusternet_nats.runtime.connection import Connection
from clusternet_nats.store import Informer, JsonBucket
from clusternet_nats.store.informer import EQUAL_VALUE_MAX_BYTES, EQUAL_VALUES_KEPT, NAME_TRIES, sharing_equal
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, KeyValueConfig
from nats.js.errors import ServerError


def decode(_key: str, data: bytes, _rev: int) -> bytes:
    return data


async def test_lists_then_follows_updates_and_deletes(private_nats: NatsServer) -> None:
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream()
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    bucket = JsonBucket(js, "things")
    await bucket.create("ns1.a", b"1")
    await bucket.create("ns2.b", b"2")
    seen: list[tuple[str, bytes | None]] = []
    informer: Informer[bytes] = Informer(nc, js, "things", decode, key_filter="ns1.>")
    informer.add_handler(lambda key, value: seen.append((key, value)))
    await informer.start()
    await informer.wait_synced(5)
    assert dict(informer.items()) == {"ns1.a": b"1"}, "the key filter confines the informer"
    rev = await bucket.create("ns1.c", b"3")
    await bucket.write("ns1.c", b"4", rev)
    await bucket.delete("ns1.a")
    await eventually(lambda: informer.get("ns1.c") == b"4" and informer.get("ns1.a") is None, 5)
    assert ("ns1.a", None) in seen
    await informer.stop()
    await conn.close()


async def test_resumes_after_server_restarts_without_missing_changes(private_nats: NatsServer) -> None:
    """With the default 30 s long poll, each restart is still caught up within seconds."""
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream(timeout=1)
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    bucket = JsonBucket(js, "things")
    informer: Informer[bytes] = Informer(nc, js, "things", decode)
    conn.on_reconnect(informer.resync)
    await informer.start()
    await informer.wait_synced(5)
    await bucket.create("before", b"x")
    await eventually(lambda: informer.get("before") == b"x", 5)

    for round_ in range(3):
        private_nats.restart()
        restarted = time.monotonic()
        key = f"after-{round_}"

        async def write_after_restart(key: str = key) -> bool:
            try:
                await bucket.create(key, b"y")
            except Exception:
                return False
            return True

        await eventually(write_after_restart, 10)
        await eventually(lambda key=key: informer.get(key) == b"y", 10, what=f"change after restart {round_}")
        assert time.monotonic() - restarted < 5, "an informer must resume within 5 s of a NATS restart"
    assert informer.get("before") == b"x"
    await informer.stop()
    await conn.close()


async def test_a_long_poll_hands_over_each_change_at_once(nc: NATS, js: JetStreamContext, unique_ns: str) -> None:
    bucket = JsonBucket(js, "bindings")
    informer: Informer[bytes] = Informer(nc, js, "bindings", decode, key_filter=f"{unique_ns}.>", idle_poll=30)
    await informer.start()
    await informer.wait_synced(5)
    for i in range(5):
        started = time.monotonic()
        await bucket.create(f"{unique_ns}.k{i}", b"{}")
        await eventually(lambda i=i: informer.get(f"{unique_ns}.k{i}") is not None, 5)
        assert time.monotonic() - started < 1.0, "a lingering pull must not hold a change back"
    await informer.stop()


async def test_recovers_when_its_consumer_is_deleted(private_nats: NatsServer) -> None:
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream()
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    bucket = JsonBucket(js, "things")
    informer: Informer[bytes] = Informer(nc, js, "things", decode, idle_poll=3)
    await informer.start()
    await informer.wait_synced(5)
    consumers = await js.consumers_info("KV_things")
    assert len(consumers) == 1
    await js.delete_consumer("KV_things", consumers[0].name)
    await bucket.create("later", b"z")
    await eventually(lambda: informer.get("later") == b"z", 10, what="a new consumer picks up where the old one was")
    await informer.stop()
    await conn.close()


async def test_relists_when_the_stream_was_recreated(private_nats: NatsServer) -> None:
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream()
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    bucket = JsonBucket(js, "things")
    for i in range(3):
        await bucket.create(f"k{i}", b"v")
    informer: Informer[bytes] = Informer(nc, js, "things", decode)
    await informer.start()
    await informer.wait_synced(5)
    await js.delete_key_value("things")

    async def recreated() -> bool:
        # nats-server removes a deleted stream's files in the background and may refuse the
        # same name meanwhile ("error creating store for stream", seen once in CI).
        try:
            await js.create_key_value(KeyValueConfig(bucket="things", history=1))
        except ServerError:
            return False
        return True

    await eventually(recreated, 10, what="the bucket made again under its old name")
    bucket = JsonBucket(js, "things")
    await bucket.create("fresh", b"new")
    informer.resync()
    await eventually(lambda: sorted(informer.keys()) == ["fresh"], 10, what="vanished keys removed on relist")
    await informer.stop()
    await conn.close()


async def test_a_learned_write_is_seen_at_once_told_once_and_its_echo_not_decoded(private_nats: NatsServer) -> None:
    """What a process wrote itself is in the cache before the stream delivers it, the handlers
    hear of it then, and the echo is neither decoded nor told again; a later write by anyone
    else, and a delete, still come through."""
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream()
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    bucket = JsonBucket(js, "things")
    decoded: list[bytes] = []

    def counting(_key: str, data: bytes, _rev: int) -> bytes:
        decoded.append(data)
        return data

    seen: list[tuple[str, bytes | None]] = []
    informer: Informer[bytes] = Informer(nc, js, "things", counting)
    informer.add_handler(lambda key, value: seen.append((key, value)))
    # Learned before the informer reads the stream, so that its echo surely comes after.
    rev = await bucket.create("mine", b"written")
    informer.learn("mine", b"written", rev)
    assert informer.get("mine") == b"written" and informer.revision("mine") == rev
    assert seen == [("mine", b"written")]
    await informer.start()
    await informer.wait_synced(5)
    await bucket.create("theirs", b"x")
    await eventually(lambda: informer.get("theirs") == b"x", 5, what="a later change delivered")
    assert informer.get("mine") == b"written", "kept through the listing"
    assert decoded == [b"x"], "the echo of the learned write was not decoded"
    assert seen == [("mine", b"written"), ("theirs", b"x")], "nor told twice"

    informer.learn("mine", b"stale", rev)  # a revision the cache holds already changes nothing
    assert informer.get("mine") == b"written"
    await bucket.write("mine", b"changed", rev)
    await bucket.delete("theirs")
    await eventually(lambda: informer.get("mine") == b"changed" and informer.get("theirs") is None, 5)
    await informer.stop()
    await conn.close()


def test_records_stored_alike_are_one_object_and_large_ones_are_not_kept() -> None:
    """A status reported the same by a fleet is held once (`sharing_equal`); a value over the size
    bound, seldom stored alike, is decoded each time."""
    decoded: list[bytes] = []

    def decode(data: bytes) -> dict[str, object]:
        decoded.append(data)
        return json.loads(data)

    shared = sharing_equal(decode)
    first = shared("ns1.desc", b'{"phase":"Success"}', 1)
    assert shared("ns2.desc", b'{"phase":"Success"}', 7) is first
    assert shared("ns3.desc", b'{"phase":"Failure"}', 2) is not first
    big = json.dumps({"pad": "x" * EQUAL_VALUE_MAX_BYTES}).encode()
    assert shared("a", big, 1) is not shared("b", big, 1)
    assert len(decoded) == 4, "one decode for the two alike, one for the other, one per large value"
    for i in range(EQUAL_VALUES_KEPT):
        shared(f"k{i}", json.dumps({"i": i}).encode(), 1)
    shared("ns1.desc", b'{"phase":"Success"}', 1)
    assert len(decoded) == 4 + EQUAL_VALUES_KEPT + 1, "the least recently met value was forgotten"


async def test_a_resync_cuts_short_the_wait_after_failures(private_nats: NatsServer) -> None:
    """Failed follows wait longer each time (jittered, store/backoff.py), so a fleet's informers do
    not retry in step; a reconnect's resync still makes the next try at once, however long the
    wait has grown."""
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream(timeout=1)
    informer: Informer[bytes] = Informer(nc, js, "later", decode)  # no such bucket yet: every follow fails
    await informer.start()
    await eventually(lambda: informer._retry.attempt >= 6, 30, what="six failed follows")
    assert informer._retry.window >= 3.2
    await js.create_key_value(KeyValueConfig(bucket="later", history=1))
    await JsonBucket(js, "later").create("k", b"v")
    resynced = time.monotonic()
    informer.resync()
    await eventually(lambda: informer.get("k") == b"v", 10, what="synced after the resync")
    assert time.monotonic() - resynced < 2.0, "the resync must not wait out the grown backoff"
    await informer.stop()
    await conn.close()


async def test_consumer_creations_that_time_out_leave_no_consumers_behind(private_nats: NatsServer) -> None:
    """A JetStream API too slow for the client's timeout still makes the consumer: a retry takes
    that one up (same name, same config), so a storm of timeouts leaves one consumer per
    NAME_TRIES creations on the server (each lives until its inactive threshold), not one each."""
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream()
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    await JsonBucket(js, "things").create("k", b"v")
    hurried = nc.jetstream(timeout=1e-6)  # every API answer comes too late
    informer: Informer[bytes] = Informer(nc, hurried, "things", decode)
    await informer.start()
    await eventually(lambda: informer._retry.attempt >= 4, 30, what="four timed-out follows")
    await informer.stop()
    tried = informer._retry.attempt
    consumers = await js.consumers_info("KV_things")
    assert 0 < len(consumers) <= -(-tried // NAME_TRIES), ([c.name for c in consumers], tried)
    await conn.close()


async def test_a_consumer_name_that_keeps_failing_is_given_up(private_nats: NatsServer) -> None:
    """In a JetStream cluster, a creation placed on a server that then died fails again on every
    retry of its name while that server is down. The informer moves to a new name after
    NAME_TRIES; here the name is made to fail for good by a consumer under it that no update
    can turn into the informer's (another ack policy)."""
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream()
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    await JsonBucket(js, "things").create("k", b"v")
    informer: Informer[bytes] = Informer(nc, js, "things", decode)
    name = f"{informer._consumer_base}-0"
    taken = ConsumerConfig(name=name, durable_name=name, ack_policy=AckPolicy.EXPLICIT, mem_storage=True)
    await js.add_consumer("KV_things", taken)
    await informer.start()
    await informer.wait_synced(15)
    assert informer.get("k") == b"v"
    await informer.stop()
    await conn.close()


async def test_ends_once_its_connection_is_closed_for_good(private_nats: NatsServer) -> None:
    """A connection closed on purpose is never reopened, so an informer its owner did not stop in
    time (a shutdown step past its bound) ends rather than retrying on it for good."""
    conn = Connection(private_nats.url, "test")
    nc = await conn.connect()
    js = nc.jetstream()
    await js.create_key_value(KeyValueConfig(bucket="closing", history=1))
    informer: Informer[bytes] = Informer(nc, js, "closing", decode, idle_poll=1.5)
    await informer.start()
    await informer.wait_synced(5)
    await conn.close()
    task = informer._task
    assert task is not None
    await eventually(task.done, 10, what="the informer's loop ended")
    assert task.exception() is None

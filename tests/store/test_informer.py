"""The informer lists, follows, and resumes after a nats-server restart without losing a change."""

import time

from clusternet_nats.runtime.connection import Connection
from clusternet_nats.store import Informer, JsonBucket
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js.api import KeyValueConfig


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


async def test_resumes_after_server_restart_without_missing_changes(private_nats: NatsServer) -> None:
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

    private_nats.restart()
    restarted = time.monotonic()

    async def write_after_restart() -> bool:
        try:
            await bucket.create("after", b"y")
        except Exception:
            return False
        return True

    await eventually(write_after_restart, 10)
    await eventually(lambda: informer.get("after") == b"y", 5, what="change after restart reaches the informer")
    assert time.monotonic() - restarted < 5, "an informer must resume within 5 s of a NATS restart"
    assert informer.get("before") == b"x"
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
    await js.create_key_value(KeyValueConfig(bucket="things", history=1))
    bucket = JsonBucket(js, "things")
    await bucket.create("fresh", b"new")
    informer.resync()
    await eventually(lambda: sorted(informer.keys()) == ["fresh"], 10, what="vanished keys removed on relist")
    await informer.stop()
    await conn.close()

"""Every bucket and stream takes its replicas from configuration, on a real 3-node JetStream
cluster: R3 everywhere, an R1 bucket made earlier is scaled up (never down), a single server asked
for R3 says why not, and a bucket survives the loss of the server that led it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import nats
import nats.js.errors
import pytest
from clusternet_nats.api.subjects import BUCKETS
from clusternet_nats.hub.registration.records import ensure_registration_buckets
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.store.buckets import (
    EVENTS_STREAM,
    ReplicasError,
    StoreLayout,
    ensure_buckets,
    ensure_stream,
    kv_stream_config,
)
from clusternet_nats.store.keys import kv_stream
from clusternet_nats.testing.natsserver import NatsCluster, NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import NoKeysError

R3 = StoreLayout(replicas=3)


@pytest.fixture
async def cluster_js(nats_cluster: NatsCluster) -> AsyncIterator[JetStreamContext]:
    """JetStream on the 3-server cluster, through a service's Connection (every URL)."""
    conn = Connection(nats_cluster.url, "pytest")
    yield (await conn.connect(timeout=10)).jetstream()
    await conn.close()


async def replicas_of(js: JetStreamContext, stream: str) -> int:
    return int((await js.stream_info(stream)).config.num_replicas or 1)


async def test_every_bucket_and_stream_is_r3_on_a_cluster(cluster_js: JetStreamContext) -> None:
    js = cluster_js
    await ensure_buckets(js, R3)
    await ensure_registration_buckets(js, R3)
    streams = [kv_stream(bucket.name) for bucket in BUCKETS] + [EVENTS_STREAM]
    found = {stream: await replicas_of(js, stream) for stream in streams}
    assert found == dict.fromkeys(streams, 3)
    info = await js.stream_info(EVENTS_STREAM)
    assert info.cluster is not None and info.cluster.leader
    assert len(info.cluster.replicas or []) == 2, "a leader and two followers"
    # Another service with the default layout (1) leaves them at 3.
    await ensure_buckets(js)
    await ensure_registration_buckets(js)
    assert {stream: await replicas_of(js, stream) for stream in streams} == dict.fromkeys(streams, 3)


async def test_an_r1_bucket_made_earlier_is_scaled_to_the_configured_replicas(cluster_js: JetStreamContext) -> None:
    js = cluster_js
    name = f"old-{uuid.uuid4().hex[:8]}"
    try:
        kv = await js.create_key_value(KeyValueConfig(bucket=name, history=1, replicas=1))

        async def put_answered() -> bool:  # a new stream on a cluster answers once it has a leader
            try:
                await kv.put("kept", b"before")
            except nats.js.errors.NoStreamResponseError:
                return False
            return True

        await eventually(put_answered, timeout=30, what="the new R1 bucket's first put")
        await ensure_stream(js, kv_stream_config(name, R3))
        assert await replicas_of(js, kv_stream(name)) == 3
        assert (await kv.get("kept")).value == b"before", "scaling keeps the data"
    finally:
        await js.delete_key_value(name)


async def test_a_single_server_asked_for_r3_names_the_stream_and_the_setting(private_nats: NatsServer) -> None:
    nc = await nats.connect(private_nats.url)
    try:
        with pytest.raises(ReplicasError) as refused:
            await ensure_buckets(nc.jetstream(), R3)
        message = str(refused.value)
        assert "stream 'KV_" in message and "3 replicas" in message and "CNET_STREAM_REPLICAS" in message
        assert "non-clustered" in message, "JetStream's own reason is kept"
    finally:
        await nc.close()


async def test_an_r3_bucket_survives_its_leader_dying_and_the_server_catches_up(
    nats_cluster: NatsCluster, cluster_js: JetStreamContext
) -> None:
    js = cluster_js
    name = f"chaos-{uuid.uuid4().hex[:8]}"
    kv = await js.create_key_value(KeyValueConfig(bucket=name, history=1, replicas=3))
    try:
        for i in range(50):
            await kv.put(f"k{i}", b"before")
        info = await js.stream_info(kv_stream(name))
        assert info.cluster is not None
        leader = next(s for s in nats_cluster.servers if s.server_name == info.cluster.leader)
        leader.kill()

        async def writable() -> bool:
            try:
                await kv.put("after", b"1")
            except Exception:
                return False
            return True

        await eventually(writable, 30, what="a new stream leader on the two servers left")
        for i in range(50, 100):
            await kv.put(f"k{i}", b"while-down")
        leader.start()
        nats_cluster.wait_meta_leader()

        async def caught_up() -> bool:
            cluster = (await js.stream_info(kv_stream(name))).cluster
            peers = [cluster.leader] + [r.name for r in cluster.replicas or [] if r.current] if cluster else []
            return leader.server_name in peers and len(peers) == 3

        await eventually(caught_up, 30, what=f"{leader.server_name} current again")
        wanted = {f"k{i}" for i in range(100)} | {"after"}

        async def all_keys() -> bool:
            # A listing's consumer made while leadership still moves can find the stream empty
            # (NoKeysError) for a moment: asked again, never accepted short.
            try:
                return set(await kv.keys()) == wanted
            except NoKeysError:
                return False

        await eventually(all_keys, 30, what="nothing written before or during the loss is lost")
    finally:
        await js.delete_key_value(name)

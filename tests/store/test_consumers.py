"""Making a consumer anew under a fixed name (store/consumers.py), against a real server."""

from __future__ import annotations

import uuid

from clusternet_nats.store.consumers import create_anew, fresh
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig


async def _stream_with(js: JetStreamContext, messages: int) -> str:
    stream = f"consumers-{uuid.uuid4().hex[:8]}"
    await js.add_stream(StreamConfig(name=stream, subjects=[f"{stream}.>"]))
    for i in range(messages):
        await js.publish(f"{stream}.{i}", b"x")
    return stream


def _config(stream: str, start: int) -> ConsumerConfig:
    return ConsumerConfig(
        name="follower",
        filter_subject=f"{stream}.>",
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE if start else DeliverPolicy.ALL,
        opt_start_seq=start or None,
        mem_storage=True,
    )


async def test_a_free_name_is_created_and_a_taken_one_replaced_from_its_own_start(
    nc: NATS, js: JetStreamContext
) -> None:
    stream = await _stream_with(js, 3)
    first = await create_anew(nc, js, stream, fresh(_config(stream, 0), "test"))
    assert first.num_pending == 3
    # Read it all: the consumer's position moves past every message.
    sub = await js.pull_subscribe_bind("follower", stream=stream)
    assert len(await sub.fetch(3, timeout=5)) == 3
    assert (await js.consumer_info(stream, "follower")).num_pending == 0
    # Asked again from another sequence: replaced, starting there.
    again = await create_anew(nc, js, stream, fresh(_config(stream, 2), "test"))
    assert again.num_pending == 2
    assert again.config.opt_start_seq == 2


async def test_the_same_configuration_asked_again_starts_over(nc: NATS, js: JetStreamContext) -> None:
    """Asked again as at first, the consumer starts over. (This server refuses a taken name even
    for an equal configuration, its stored one having defaults filled in; were an equal one handed
    back with its delivery state, the fresh description would still make each request its own.)"""
    stream = await _stream_with(js, 2)
    await create_anew(nc, js, stream, _config(stream, 0))
    sub = await js.pull_subscribe_bind("follower", stream=stream)
    assert len(await sub.fetch(2, timeout=5)) == 2
    again = await create_anew(nc, js, stream, _config(stream, 0))
    assert again.num_pending == 2
    assert again.delivered.stream_seq == 0

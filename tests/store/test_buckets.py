"""Every bucket exists once, and admits one consumer per cluster well past the server's default."""

from clusternet_nats.store import ensure_buckets
from clusternet_nats.store.buckets import EVENTS_STREAM, MAX_CONSUMERS, bucket_names
from nats.js import JetStreamContext


async def test_buckets_are_created_idempotently_with_room_for_many_consumers(js: JetStreamContext) -> None:
    await ensure_buckets(js)  # a second service starting finds them all in place
    names = bucket_names()
    assert {"subscriptions", "subscriptions-status", "bindings", "descriptions", "descriptions-status"} <= set(names)
    for stream in [f"KV_{name}" for name in names] + [EVENTS_STREAM]:
        info = await js.stream_info(stream)
        assert info.config.max_consumers == MAX_CONSUMERS, stream
    descriptions = await js.stream_info("KV_descriptions")
    assert descriptions.config.max_msgs_per_subject == 1, "history 1: the latest value or tombstone is all we keep"

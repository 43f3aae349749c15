"""Following a KV bucket from a revision: the store-level half of the hub's `?watch=true`.

An ordered push consumer on the bucket's stream (nats-py's; it recreates itself on a gap), from
`after + 1`, filtered to a key prefix. Buckets keep one version per key (history 1), so a watch
from an old revision sees each key's latest change since then, not every intermediate one
(level-triggered readers, which every Kubernetes client is, need no more). What the stream no
longer holds at all (`after` below its first sequence) cannot be replayed: BucketGone, which the
hub turns into kube-apiserver's `410 Gone` so the client lists again.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from clusternet_nats.store.keys import kv_stream, kv_subject_prefix
from clusternet_nats.store.kv import is_deletion
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy


@dataclass(frozen=True)
class Change:
    """One KV write: `data` None for a delete marker; `revision` its stream sequence."""

    key: str
    data: bytes | None
    revision: int


class BucketGone(Exception):
    """The revision a watch asked to start after is older than what the bucket's stream holds."""

    def __init__(self, bucket: str, after: int, first: int) -> None:
        super().__init__(f"revision {after} of bucket {bucket!r} is gone: the oldest held is {first}")
        self.bucket, self.after, self.first = bucket, after, first


async def bucket_revision(js: JetStreamContext, bucket: str) -> int:
    """The bucket's latest revision (its stream's last sequence)."""
    return int((await js.stream_info(kv_stream(bucket))).state.last_seq)


@contextlib.asynccontextmanager
async def watch_bucket(
    js: JetStreamContext, bucket: str, key_filter: str, after: int
) -> AsyncIterator[AsyncIterator[Change]]:
    """The changes to keys matching `key_filter` with a revision above `after`, in order, until
    the context exits; raises BucketGone before yielding if `after` is too old."""
    state = (await js.stream_info(kv_stream(bucket))).state
    if after + 1 < state.first_seq and after < state.last_seq:
        raise BucketGone(bucket, after, state.first_seq)
    prefix = kv_subject_prefix(bucket)
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after + 1, mem_storage=True
    )
    sub = await js.subscribe(prefix + key_filter, stream=kv_stream(bucket), config=config, ordered_consumer=True)

    async def changes() -> AsyncIterator[Change]:
        async for msg in sub.messages:
            data = None if is_deletion(msg.headers) else msg.data
            yield Change(msg.subject[len(prefix) :], data, msg.metadata.sequence.stream)

    try:
        yield changes()
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()

"""The buckets and streams the system keeps, created idempotently by whoever starts first.

One bucket per kind holds spec (users write it); a `<kind>-status` bucket holds status
(controllers write it); `bindings` holds the scheduler's decision for each Subscription, apart
from the deployer's aggregated status, so two controllers never compare-and-set one key.
History is 1: the latest value (or tombstone) per key is all a level-triggered reader needs.
"""

from dataclasses import dataclass

from clusternet_nats.api.subjects import BINDINGS_BUCKET as BINDINGS_BUCKET
from clusternet_nats.api.subjects import BUCKETS, EVENTS
from clusternet_nats.api.subjects import EVENTS_STREAM as EVENTS_STREAM
from clusternet_nats.store.keys import kv_stream
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError

EVENTS_MAX_AGE_SECONDS = 24 * 3600
EVENTS_PER_OBJECT = 200
MAX_VALUE_BYTES = 8 * 1024 * 1024
# nats-server 2.15 gives a stream that leaves max_consumers unset a limit of 1,000 consumers
# (jetstream.limits.default_max_consumers); every agent follows its own Descriptions with its
# own consumer, so the 1,001st cluster could not start (found by bench/replication_rollout.py).
MAX_CONSUMERS = 100_000


@dataclass(frozen=True)
class StoreLayout:
    replicas: int = 1
    storage: StorageType = StorageType.FILE


def bucket_names() -> list[str]:
    """Every bucket in api/subjects.py but registration's (the hub makes those)."""
    return [bucket.name for bucket in BUCKETS if not bucket.registration]


async def ensure_buckets(js: JetStreamContext, layout: StoreLayout | None = None) -> None:
    """Creates every bucket and the events stream if missing; safe to call from every service."""
    layout = layout or StoreLayout()
    for name in bucket_names():
        try:
            await js.key_value(name)
        except Exception:
            try:
                await js.create_key_value(
                    KeyValueConfig(
                        bucket=name,
                        history=1,
                        storage=layout.storage,
                        replicas=layout.replicas,
                        max_value_size=MAX_VALUE_BYTES,
                        # Direct gets name the key in the subject, so NATS permissions can confine
                        # a cluster's reads to its own keys (a STREAM.MSG.GET hides it in the body).
                        direct=True,
                    )
                )
            except BadRequestError:
                # Another service created it between our check and our create.
                await js.key_value(name)
        await tune_stream(js, kv_stream(name), direct=True)
    config = StreamConfig(
        name=EVENTS_STREAM,
        subjects=[EVENTS.grant()],
        retention=RetentionPolicy.LIMITS,
        max_age=EVENTS_MAX_AGE_SECONDS,
        max_msgs_per_subject=EVENTS_PER_OBJECT,
        storage=layout.storage,
        num_replicas=layout.replicas,
        max_consumers=MAX_CONSUMERS,
    )
    try:
        await js.stream_info(EVENTS_STREAM)
    except Exception:
        try:
            await js.add_stream(config)
        except BadRequestError:
            await js.stream_info(EVENTS_STREAM)
    await tune_stream(js, EVENTS_STREAM)


async def tune_stream(js: JetStreamContext, stream: str, direct: bool = False) -> None:
    """Room for one consumer per cluster, direct gets for buckets, and no rollups; also on
    streams made before. nats-py makes KV streams that honour `Nats-Rollup`, with which one
    publish purges every key; nothing here uses it (deletes are markers), so none may."""
    info = await js.stream_info(stream)
    config = info.config
    if config.max_consumers != MAX_CONSUMERS or (direct and not config.allow_direct) or config.allow_rollup_hdrs:
        config.max_consumers = MAX_CONSUMERS
        config.allow_direct = config.allow_direct or direct
        config.allow_rollup_hdrs = False
        await js.update_stream(config)

"""The buckets and streams the system keeps, created idempotently by whoever starts first.

One bucket per kind holds spec (users write it); a `<kind>-status` bucket holds status
(controllers write it); `bindings` holds the scheduler's decision for each Subscription, apart
from the deployer's aggregated status, so two controllers never compare-and-set one key.
History is 1: the latest value (or tombstone) per key is all a level-triggered reader needs.

Replicas come from configuration (`--stream-replicas`, StoreLayout): R3 on a 3-node JetStream
cluster keeps every bucket through the loss of one server. A bucket made with fewer replicas
(an R1 store moved onto a cluster) is scaled up in place; replicas never shrink here, since a
service started with the default of 1 must not undo what the hub-side services configured.
Buckets are created with their final configuration in one request (a clustered create or update
is a Raft proposal: services starting together once timed out on create-then-tune), and a
request that times out while the cluster elects a leader is asked again.
"""

import asyncio
from dataclasses import dataclass

import structlog
from clusternet_nats.api.subjects import BINDINGS_BUCKET as BINDINGS_BUCKET
from clusternet_nats.api.subjects import BUCKETS, EVENTS
from clusternet_nats.api.subjects import EVENTS_STREAM as EVENTS_STREAM
from clusternet_nats.store.keys import kv_stream
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import APIError, NotFoundError, ServiceUnavailableError

log = structlog.get_logger(__name__)

EVENTS_MAX_AGE_SECONDS = 24 * 3600
EVENTS_PER_OBJECT = 200
MAX_VALUE_BYTES = 8 * 1024 * 1024
# nats-server 2.15 gives a stream that leaves max_consumers unset a limit of 1,000 consumers
# (jetstream.limits.default_max_consumers); every agent follows its own Descriptions with its
# own consumer, so the 1,001st cluster could not start (found by bench/rollout.py).
MAX_CONSUMERS = 100_000


@dataclass(frozen=True)
class StoreLayout:
    replicas: int = 1
    storage: StorageType = StorageType.FILE


class ReplicasError(RuntimeError):
    """JetStream refused the replica count asked for a bucket or stream (too few servers)."""


STREAM_NAME_IN_USE = 10058
"""JetStream's error code for a create that lost the race to another service's (other config)."""
KV_DUPLICATE_WINDOW_SECONDS = 120.0
ENSURE_TIMEOUT_SECONDS = 60.0
"""How long a service keeps asking while the JetStream cluster has no leader (elections)."""


def bucket_names() -> list[str]:
    """Every bucket in api/subjects.py but registration's (the hub makes those)."""
    return [bucket.name for bucket in BUCKETS if not bucket.registration]


def kv_stream_config(bucket: str, layout: StoreLayout, max_value_size: int = -1, direct: bool = False) -> StreamConfig:
    """A key-value bucket's stream as nats-py's create_key_value makes it (so `js.key_value`
    opens it), with history 1, room for one consumer per cluster and no rollups: nats-py's
    buckets honour `Nats-Rollup`, with which one publish purges every key; nothing here uses it
    (deletes are markers), so none may. Direct gets name the key in the subject, so NATS
    permissions can confine a cluster's reads to its own keys (STREAM.MSG.GET hides it)."""
    return StreamConfig(
        name=kv_stream(bucket),
        subjects=[f"$KV.{bucket}.>"],
        allow_direct=direct,
        allow_rollup_hdrs=False,
        allow_msg_ttl=True,
        deny_delete=True,
        discard=DiscardPolicy.NEW,
        duplicate_window=KV_DUPLICATE_WINDOW_SECONDS,
        max_consumers=MAX_CONSUMERS,
        max_msg_size=max_value_size,
        max_msgs=-1,
        max_msgs_per_subject=1,
        num_replicas=layout.replicas,
        storage=layout.storage,
    )


async def ensure_buckets(js: JetStreamContext, layout: StoreLayout | None = None) -> None:
    """Creates every bucket and the events stream if missing; safe to call from every service."""
    layout = layout or StoreLayout()
    for name in bucket_names():
        await ensure_stream(js, kv_stream_config(name, layout, MAX_VALUE_BYTES, direct=True))
    events = StreamConfig(
        name=EVENTS_STREAM,
        subjects=[EVENTS.grant()],
        retention=RetentionPolicy.LIMITS,
        max_age=EVENTS_MAX_AGE_SECONDS,
        max_msgs_per_subject=EVENTS_PER_OBJECT,
        storage=layout.storage,
        num_replicas=layout.replicas,
        max_consumers=MAX_CONSUMERS,
    )
    await ensure_stream(js, events)


async def ensure_stream(js: JetStreamContext, config: StreamConfig, timeout: float = ENSURE_TIMEOUT_SECONDS) -> None:
    """Creates the stream, or brings an existing one up to `config`'s consumers, direct gets,
    rollups and replicas (never fewer replicas). Asks again while JetStream has no leader."""
    assert config.name is not None
    deadline = asyncio.get_running_loop().time() + timeout
    delay = 0.1
    while True:
        try:
            await _ensure_stream_once(js, config)
            return
        except (NatsTimeoutError, ServiceUnavailableError) as err:
            if asyncio.get_running_loop().time() + delay > deadline:
                raise
            log.info("store.stream_retry", stream=config.name, error=repr(err))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


async def _ensure_stream_once(js: JetStreamContext, config: StreamConfig) -> None:
    assert config.name is not None
    replicas = config.num_replicas or 1
    try:
        info = await js.stream_info(config.name)
    except NotFoundError:
        try:
            await js.add_stream(config)
            return
        except APIError as err:
            if err.err_code != STREAM_NAME_IN_USE:
                raise _replicas_error(f"stream {config.name!r}", replicas, err) from err
        info = await js.stream_info(config.name)  # another service made it meanwhile
    current = info.config
    scale = (current.num_replicas or 1) < replicas
    if (
        current.max_consumers == MAX_CONSUMERS
        and (current.allow_direct or not config.allow_direct)
        and not current.allow_rollup_hdrs
        and not scale
    ):
        return
    if scale:
        log.info("store.stream_scaled", stream=config.name, replicas=replicas, was=current.num_replicas or 1)
        current.num_replicas = replicas
    current.max_consumers = MAX_CONSUMERS
    current.allow_direct = bool(current.allow_direct or config.allow_direct)
    current.allow_rollup_hdrs = False
    try:
        await js.update_stream(current)
    except APIError as err:
        if isinstance(err, ServiceUnavailableError):
            raise
        raise _replicas_error(f"stream {config.name!r}", replicas if scale else 1, err) from err


def _replicas_error(what: str, replicas: int, err: APIError) -> Exception:
    """A create or update JetStream refused: named, and with the likely cause when R > 1."""
    if replicas <= 1:
        return err
    return ReplicasError(
        f"{what}: JetStream refused {replicas} replicas (--stream-replicas / CNET_STREAM_REPLICAS): "
        f"{err.description}; R{replicas} needs a JetStream cluster of at least {replicas} servers"
    )

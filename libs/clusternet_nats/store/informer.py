"""An informer over one KV bucket: list every key, then follow changes, into a local cache.

Why not nats-py's `kv.watch()`: it rides an ordered push consumer that, after a nats-server
restart, took about 15 s to notice (measured, see docs/architecture.md). Here a pull consumer
with no acks is read with long polls (store/pull.py); the informer remembers the last stream
sequence it applied and, whenever its consumer is gone (server restart, lost connection,
consumer deleted) or delivered into a gap (store/pull.py), makes a new one that starts right
after it. Nothing is missed and nothing is replayed twice, so resuming takes one consumer
creation once the connection is back: the connection's reconnect callback calls `resync()`,
which cuts the current poll short. If the
stream itself was reset (its last sequence is behind ours), it relists from scratch and reports
the keys that vanished.

An idle informer costs the server one pull request per `idle_poll` seconds (30 s by default)
and an idle heartbeat every third of that, not a poll a second. An agent's informers, one per
cluster of a fleet, poll every 90 s (`FLEET_IDLE_POLL`): a heartbeat every 30 s, as the hub's
consumer for a registered cluster sends them (api/intake.py: DELIVERY_HEARTBEAT says why).

A registered cluster's informer is confined: it may not use JetStream at all (api/intake.py says
why), so it asks the hub's intake to (re)start the consumer that delivers its Descriptions from
a sequence (`follow`) to a subject inside its own inbox, and reads those deliveries
(store/pull.py: PushReader); the hub answers 410 when the stream is behind that sequence (it was
reset). Whatever arrives is checked against the stream, the consumer and the filter, so a key
outside it is never applied, whatever the permissions.

Handlers are plain callables that should only enqueue keys (see WorkQueue): reconcilers read
the latest state from the cache when they run, so missed, merged or reordered notifications
change nothing. They are called inside the trace context the change's writer put in its headers
(store/tracecontext.py), so the work a change causes joins the writer's trace.

`lag` is how many changes within the filter the stream held beyond the last one applied, as the
last delivery said (its consumer's pending count): what `cnet_informer_lag_messages` reports.

What an informer caches is read-only to everyone: one object serves every controller of the
process. So records stored alike under many keys (a Description status reported the same by
10,000 clusters after a rollout, 3.6 KiB decoded each) can be one object too (`sharing_equal`),
and what pydantic keeps beside each model is shared where alike (store/compact.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import structlog
from clusternet_nats.api.intake import DELIVERY_HEARTBEAT
from clusternet_nats.api.registration import agent_consumer_name
from clusternet_nats.store.backoff import Backoff
from clusternet_nats.store.cancelling import cancel_and_wait
from clusternet_nats.store.compact import share_field_sets
from clusternet_nats.store.domain import api_prefix
from clusternet_nats.store.errors import IntakeRefusedError, UndecodableError
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.store.keys import kv_stream, kv_subject_prefix, subject_matches
from clusternet_nats.store.kv import UNDECODABLE, is_deletion
from clusternet_nats.store.pull import PullReader, PushReader
from clusternet_nats.store.tracecontext import attached, extract
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

T = TypeVar("T")
Handler = Callable[[str, "T | None"], None]

FETCH_BATCH = 512
"""Messages one pull request of an informer asks for."""
RETRY_BASE, RETRY_CAP = 0.1, 5.0
"""Waits after a failed follow, with full jitter (store/backoff.py). Thousands of agents' informers
start together, and the JetStream API, slow under that storm, times their consumer creations out
(6,877 of 10,000 simulated clusters at once in one start): retried within a second each, in step,
they came back as one storm. A reconnect cuts the wait short (`resync`)."""
DEFAULT_IDLE_POLL = 30.0
FLEET_IDLE_POLL = 3 * DELIVERY_HEARTBEAT
NAME_TRIES = 2
"""Consumer creations tried under one name before the next name. A retry after a timeout takes
up the consumer the server made meanwhile (same name, same config: it is returned as it is)
instead of leaving it behind until its inactive threshold. But not forever: in a JetStream
cluster, a creation placed on a server that then died is proposed again, to the same dead
server, on every retry of its name (seen: an informer failing for over a minute with two of
three servers up). A consumer left behind expires after its inactive threshold."""
EQUAL_VALUES_KEPT = 256
"""Distinct small values `sharing_equal` remembers, the least recently met forgotten first."""
EQUAL_VALUE_MAX_BYTES = 4096
"""Larger values are decoded each time: they are seldom stored alike under many keys."""

log = structlog.get_logger(__name__)


def sharing_equal(decode: Callable[[bytes], T]) -> Callable[[str, bytes, int], T]:
    """An informer's decode that gives the object it made before for the very same bytes, so a
    value stored alike under many keys is held once (the cache is read-only, see above)."""
    made: OrderedDict[bytes, T] = OrderedDict()

    def decode_shared(_key: str, data: bytes, _revision: int) -> T:
        if len(data) > EQUAL_VALUE_MAX_BYTES:
            return decode(data)
        found = made.get(data)
        if found is None:
            found = made[data] = decode(data)
            if len(made) > EQUAL_VALUES_KEPT:
                made.popitem(last=False)
        else:
            made.move_to_end(data)
        return found

    return decode_shared


def informer_consumer(name: str, filter_subject: str, start: int, idle_poll: float) -> ConsumerConfig:
    """An informer's own pull consumer, from stream sequence `start` (0: the latest of each key);
    the server removes it when no pull came for two idle polls and then some."""
    config = ConsumerConfig(
        name=name,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.NONE,
        inactive_threshold=2 * idle_poll + 10.0,
        mem_storage=True,
        max_ack_pending=-1,
        deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
    )
    if start:
        config.deliver_policy, config.opt_start_seq = DeliverPolicy.BY_START_SEQUENCE, start
    return config


class Informer(Generic[T]):
    """Mirror of one bucket (optionally one key filter) with change notifications."""

    def __init__(
        self,
        nc: NATS,
        js: JetStreamContext,
        bucket: str,
        decode: Callable[[str, bytes, int], T],
        key_filter: str = ">",
        idle_poll: float = DEFAULT_IDLE_POLL,
        intake: IntakeClient | None = None,
    ) -> None:
        self.nc, self.js = nc, js
        self.intake = intake
        """A registered cluster's: its Descriptions are delivered by a consumer the hub makes."""
        self.idle_poll = idle_poll
        self.bucket = bucket
        self.stream = kv_stream(bucket)
        self.subject_prefix = kv_subject_prefix(bucket)
        self.key_filter = key_filter
        self.decode = decode
        self._cache: dict[str, T] = {}
        self._revisions: dict[str, int] = {}
        self._handlers: list[Handler[T]] = []
        self._last_seq = 0
        self._pending = 0
        self._synced = asyncio.Event()
        self._reset = asyncio.Event()
        self._retry = Backoff(RETRY_BASE, RETRY_CAP)
        self._consumer_base = nc.new_inbox().rsplit(".", 1)[-1]
        self._consumers_made = 0
        self._name_tries = 0
        self._task: asyncio.Task[None] | None = None
        self._log = log.bind(bucket=bucket, key_filter=key_filter)

    # -- reading ---------------------------------------------------------------------------

    def get(self, key: str) -> T | None:
        return self._cache.get(key)

    def revision(self, key: str) -> int:
        return self._revisions.get(key, 0)

    def keys(self) -> list[str]:
        return list(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    def items(self) -> Iterator[tuple[str, T]]:
        return iter(list(self._cache.items()))

    def values(self) -> list[T]:
        return list(self._cache.values())

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    @property
    def last_sequence(self) -> int:
        """The last stream sequence applied."""
        return self._last_seq

    @property
    def lag(self) -> int:
        """Changes within the filter not applied yet, as of the last delivery."""
        return self._pending

    # -- running ---------------------------------------------------------------------------

    def add_handler(self, handler: Handler[T]) -> None:
        self._handlers.append(handler)

    def learn(self, key: str, value: T, revision: int) -> None:
        """A write this process made itself (`value` stored at `revision`), applied at once, as
        its echo would be: the cache has it and the handlers are told. The echo, when it comes,
        is skipped undecoded. So the writer's next read is not behind its own write (a converge
        that wrote a fleet's objects does not take them for missing), and a fleet's writes are
        not decoded again."""
        if self._revisions.get(key, 0) >= revision:
            return
        share_field_sets(value)
        self._cache[key] = value
        self._revisions[key] = revision
        self._notify(key, value)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"informer:{self.bucket}")

    async def wait_synced(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self._synced.wait()

    def resync(self) -> None:
        """Asks for a new consumer now (called on reconnect, so recovery does not wait a poll)."""
        self._reset.set()

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                if self.nc.is_closed:
                    # Closed on purpose (services reconnect forever): nothing left to follow. An
                    # owner whose stop timed out would otherwise leave this loop retrying for good.
                    self._log.info("informer.connection_closed")
                    return
                self._log.info("informer.reconnecting", error=repr(err), detail=getattr(err, "description", None))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._retry.next_delay()):
                        await self._reset.wait()

    async def _follow(self) -> None:
        self._reset.clear()
        if self.intake is not None:
            reader, pending, relist = await self._delivered_by_hub(self.intake)
            name = None
        else:
            relist = await self._stream_was_reset()
            if relist:
                self._forget()
            reader, pending, name = await self._own_consumer()
        self._retry.reset()  # following again: the next failure is a first one
        seen: set[str] | None = set() if relist or not self.synced else None
        try:
            if not pending:
                self._mark_synced(seen)
                seen = None
            while not self._reset.is_set():
                msgs = await self._next(reader)
                for msg in msgs or ():
                    self._apply(msg, seen)
                    if seen is not None and msg.metadata.num_pending == 0:
                        self._mark_synced(seen)
                        seen = None
        finally:
            await reader.close()
            if name is not None:
                with contextlib.suppress(Exception):
                    await self.js.delete_consumer(self.stream, name)

    def _forget(self) -> None:
        self._last_seq = 0
        self._revisions.clear()

    async def _own_consumer(self) -> tuple[PullReader, int, str]:
        name = f"{self._consumer_base}-{self._consumers_made}"
        config = informer_consumer(
            name,
            self.subject_prefix + self.key_filter,
            self._last_seq + 1 if self._last_seq else 0,
            self.idle_poll,
        )
        try:
            info = await self.js.add_consumer(self.stream, config)
        except Exception:
            self._name_tries += 1
            if self._name_tries >= NAME_TRIES:
                self._next_consumer_name()
            raise
        self._next_consumer_name()
        reader = PullReader(self.nc, self.stream, name, FETCH_BATCH, self.idle_poll, api_prefix(self.js))
        await reader.start()
        return reader, int(info.num_pending or 0), name

    def _next_consumer_name(self) -> None:
        self._consumers_made += 1
        self._name_tries = 0

    async def _delivered_by_hub(self, intake: IntakeClient) -> tuple[PullReader, int, bool]:
        """Subscribes where the hub's consumer delivers, then asks the hub to start it."""
        consumer = agent_consumer_name(intake.namespace)
        reader = PushReader(self.nc, self.stream, consumer, intake.deliver_subject, DELIVERY_HEARTBEAT)
        await reader.start()
        relist = False
        try:
            try:
                pending = await intake.follow(self._last_seq + 1 if self._last_seq else 0)
            except IntakeRefusedError as err:
                if err.code != 410:
                    raise
                self._forget()
                relist = True
                pending = await intake.follow(0)
        except BaseException:
            await reader.close()
            raise
        return reader, pending, relist

    async def _next(self, reader: PullReader) -> list[Msg] | None:
        """The next messages, or None when a resync asked for a new consumer first."""
        pull = asyncio.ensure_future(reader.next())
        reset = asyncio.ensure_future(self._reset.wait())
        try:
            await asyncio.wait({pull, reset}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            reset.cancel()
            if not pull.done():  # a resync, or the informer stopping: the pull is abandoned
                await cancel_and_wait([pull])
        return None if pull.cancelled() else pull.result()

    async def _stream_was_reset(self) -> bool:
        if not self._last_seq:
            return False
        info = await self.js.stream_info(self.stream)
        return int(info.state.last_seq) < self._last_seq

    def _mark_synced(self, seen: set[str] | None) -> None:
        if seen is not None and self.synced:
            for key in [k for k in self._cache if k not in seen]:
                self._remove(key)
        if not self.synced:
            self._log.debug("informer.synced", objects=len(self._cache))
        self._synced.set()

    def _apply(self, msg: Msg, seen: set[str] | None) -> None:
        self._pending = msg.metadata.num_pending or 0
        with attached(extract(msg.headers)):  # what the handlers queue joins the writer's trace
            self._apply_change(msg, seen)

    def _apply_change(self, msg: Msg, seen: set[str] | None) -> None:
        seq = msg.metadata.sequence.stream
        self._last_seq = max(self._last_seq, seq)
        if not subject_matches(self.subject_prefix + self.key_filter, msg.subject):
            self._log.warning("informer.foreign_key", subject=msg.subject)
            return
        key = msg.subject[len(self.subject_prefix) :]
        if self._revisions.get(key, 0) >= seq:
            if seen is not None:
                seen.add(key)
            return  # applied already (`learn`)
        if is_deletion(msg.headers):
            self._remove(key)
            return
        if seen is not None:
            seen.add(key)
        try:
            value = self.decode(key, msg.data, seq)
        except UndecodableError:  # reported (logged and counted) where it was decoded
            return
        except Exception as err:  # kept at its last decodable value, if any: never a stop of the feed
            UNDECODABLE[self.bucket] += 1
            self._log.warning("informer.undecodable", key=key, revision=seq, error=str(err)[:300])
            return
        share_field_sets(value)
        self._cache[key] = value
        self._revisions[key] = seq
        self._notify(key, value)

    def _remove(self, key: str) -> None:
        if key in self._cache:
            del self._cache[key]
            self._revisions.pop(key, None)
            self._notify(key, None)

    def _notify(self, key: str, value: T | None) -> None:
        for handler in self._handlers:
            try:
                handler(key, value)
            except Exception as err:
                self._log.error("informer.handler_failed", key=key, error=repr(err))

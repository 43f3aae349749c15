"""Typed, compare-and-set access to KV buckets.

Every write carries the revision it was based on (`Nats-Expected-Last-Subject-Sequence`), so a
write built on a stale read fails with ConflictError instead of silently undoing someone
else's change. The KV revision is the object's `metadata.resourceVersion`.

What is nats-py's and what is ours, and why:

* Reads are nats-py's `KeyValue.get` (a direct get where the bucket allows it), tombstones
  included (a deleted key's KeyNotFoundError carries the delete marker's revision).
* Writes are `js.publish` with nats-py's header names, not `KeyValue.create/update/delete`,
  for two things those cannot do: every value says its encoding in a `Content-Type` header
  (docs/architecture.md; KeyValue sets its own headers and takes none), and an agent whose
  JetStream is another domain's, across a leaf node, writes through `$JS.<domain>.API.$KV...`
  because nats-server denies `$KV.>` between domains (nats.go's `useJSPfx`; nats-py's KeyValue
  always publishes to `$KV.`). So creating over a tombstone is ours too, in KeyValue.create's
  steps. The wire protocol is the KV protocol unchanged.
* A lost compare-and-set is the JetStream error nats-py's KeyValue turns into
  KeyWrongLastSequenceError (codes 10071 and 10164, which nats-py names nowhere public); here it
  becomes ConflictError, in one place (`_cas_publish`).
* `entries()` lists with a server-side subject filter and values in one consumer pass, where
  nats-py's `keys(filters=...)` watches the whole bucket and matches substrings.
* A registered cluster uses no JetStream at all: its buckets are requests to the hub's intake
  (store/intake.py).
* Every write runs in a `store.write` span and carries the trace context in its headers
  (`traceparent`), so whoever follows the bucket continues the writer's trace
  (store/tracecontext.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import uuid
import weakref
from collections import Counter
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog
from clusternet_nats.api.meta import KubeObject, utcnow
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.api.subjects import PUBLISH_ACKS
from clusternet_nats.domain.finalizers import added_while_deleting, held
from clusternet_nats.store.domain import api_prefix
from clusternet_nats.store.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    StoreError,
    UndecodableError,
)
from clusternet_nats.store.errors import NotFoundError as ObjectNotFoundError
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.store.keys import kv_stream, kv_subject_prefix, object_key
from clusternet_nats.store.tracecontext import AttributeValue, inject, span
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import DEFAULT_PREFIX, AckPolicy, ConsumerConfig, DeliverPolicy, Header
from nats.js.errors import APIError, KeyNotFoundError
from nats.js.kv import KV_DEL, KV_MARKER_REASON, KV_OP, KV_PURGE, KeyValue
from opentelemetry.trace import SpanKind
from pydantic import BaseModel, ValidationError

log = structlog.get_logger(__name__)

UNDECODABLE: Counter[str] = Counter()
"""Stored values met that could not be decoded, by bucket (`cnet_undecodable_records_total`)."""

CONTENT_TYPE = "Content-Type"
JSON_CONTENT_TYPE = "application/json"
_WRONG_LAST_SEQUENCE = (10071, 10164)  # JSStreamWrongLastSequenceErrF, JSStreamWrongLastSequenceConstantErr
WRITE_TIMEOUT = 5.0
"""Seconds a pipelined batch waits with no ack coming, for room among its publishes in flight or
for the last of them (nats-py's default request timeout, which an awaited write has). A stall,
not a deadline for the batch: the last MAX_PENDING acks of a 10,000-cluster rollout took over 5 s
on this shared machine, and the batch, timed out whole, failed its converge, which wrote the fleet
again (the deployer's CPU doubled, and the status came 5.7 s after the last cluster's)."""
MAX_PENDING = 4096
"""Pipelined publishes of one batch awaiting their acks at once. A fleet's Descriptions went in
faster with 4,096 than with 1,024 (`bench/rollout.py --clusters 10000`, alternated on 2026-12-02:
1,064 and 1,028/s, all Success in 17.71 and 16.45 s, against 793 and 801/s, 18.74 and 17.53 s);
with every one of the 10,000 in flight at once they went in faster still, but all Success came
later (23.5 and 26.2 s): the fleet's agents all woke at once."""


def is_deletion(headers: Mapping[str, str] | None) -> bool:
    """Whether a KV message is a delete marker: ours (KV-Operation DEL/PURGE) or one the server
    placed (Nats-Marker-Reason, nats-server 2.11+, in a bucket with a TTL; nats-py's `get` does
    not recognise those, so `JsonBucket.get` on such a bucket would see an empty value)."""
    return headers is not None and (headers.get(KV_OP) in (KV_DEL, KV_PURGE) or KV_MARKER_REASON in headers)


T = TypeVar("T", bound=BaseModel)
K = TypeVar("K", bound=KubeObject)
R = TypeVar("R")


async def settled(write: Awaitable[R]) -> R | StoreError:
    """The result of a write, or the store error it failed with (one outcome among many)."""
    try:
        return await write
    except StoreError as err:
        return err


@dataclass(frozen=True)
class Versioned(Generic[T]):
    value: T
    revision: int


class _AckInbox:
    """One connection's subscription for the acks of all its pipelined publishes, a token each.

    A subscription per batch would be a subscribe and an unsubscribe per batch, and nats-server
    answers every unsubscribe of a wildcard subject by walking the account's whole map of pending
    service replies (`checkForReverseEntries`): with a fleet's requests in flight that walk was a
    sixth of the server's CPU in a 10,000-cluster rollout. One subscription per connection, made
    on first use and kept (nats-py restores it after a reconnect), costs neither.
    """

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.prefix = uuid.uuid4().hex
        self.waiting: dict[str, tuple[asyncio.Future[Msg], asyncio.Semaphore]] = {}
        self._tokens = itertools.count()
        self._subscribed: asyncio.Task[Any] | None = None

    async def ready(self) -> None:
        if self._subscribed is None:
            self._subscribed = asyncio.ensure_future(
                self.nc.subscribe(PUBLISH_ACKS.filter(batch=self.prefix), cb=self._acked)
            )
        try:
            await asyncio.shield(self._subscribed)
        except BaseException:
            if self._subscribed.done():
                self._subscribed = None  # a failed subscribe is tried again by the next batch
            raise

    def expect(self, room: asyncio.Semaphore) -> tuple[str, asyncio.Future[Msg]]:
        reply = PUBLISH_ACKS.format(batch=self.prefix, index=str(next(self._tokens)))
        future: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()
        self.waiting[reply] = (future, room)
        return reply, future

    async def _acked(self, msg: Msg) -> None:
        waiting = self.waiting.pop(msg.subject, None)
        if waiting is not None and not waiting[0].done():
            waiting[0].set_result(msg)
            waiting[1].release()


_ACK_INBOXES: weakref.WeakKeyDictionary[Any, _AckInbox] = weakref.WeakKeyDictionary()


async def publish_pipelined(
    js: JetStreamContext, publishes: Sequence[tuple[str, bytes, dict[str, str]]]
) -> list[int | BaseException]:
    """JetStream publishes all in flight together, at most MAX_PENDING unacknowledged (the flow
    control); each one's stream sequence, or the error it got, in order.

    nats-py's `publish_async` would do this, but its reply handler raises a JetStream error
    instead of setting it on the publish's future (2.16: `APIError.from_error` raises), so a lost
    compare-and-set would surface as a timeout. This is the same protocol (a reply inbox, a token
    per message) with errors kept. The connection is nats-py's `js._nc`, which has no public
    accessor (tests/store/test_nats_py.py).
    """
    nc = js._nc
    inbox = _ACK_INBOXES.get(nc)
    if inbox is None:
        inbox = _ACK_INBOXES[nc] = _AckInbox(nc)
    await inbox.ready()
    room = asyncio.Semaphore(MAX_PENDING)
    acks: dict[str, asyncio.Future[Msg]] = {}
    try:
        for subject, data, headers in publishes:
            if room.locked():
                async with asyncio.timeout(WRITE_TIMEOUT):
                    await room.acquire()
            else:
                # With room, acquiring neither yields nor needs a timer, so a batch's publishes
                # reach the socket together, not in a write each.
                await room.acquire()
            reply, future = inbox.expect(room)
            acks[reply] = future
            await nc.publish(subject, data, reply=reply, headers=headers)
        await _acknowledged(list(acks.values()))
    finally:
        for reply in acks:
            inbox.waiting.pop(reply, None)
    return [_ack(future) for future in acks.values()]


async def _acknowledged(futures: list[asyncio.Future[Msg]]) -> None:
    """Returns once every one is done, or once WRITE_TIMEOUT passed with none done."""
    while futures:
        _, pending = await asyncio.wait(futures, timeout=WRITE_TIMEOUT)
        if len(pending) == len(futures):
            return
        futures = list(pending)


def _ack(future: asyncio.Future[Msg]) -> int | BaseException:
    """The stream sequence a JetStream publish was stored at, or why it was not."""
    if not future.done():
        future.cancel()
        return TimeoutError("no acknowledgement from JetStream")
    msg = future.result()
    if not msg.data and msg.headers and msg.headers.get(Header.STATUS):  # e.g. 503: no stream
        return APIError(code=int(msg.headers[Header.STATUS]), description=msg.headers.get(Header.DESCRIPTION))
    reply = json.loads(msg.data)
    if "error" in reply:
        return APIError(**reply["error"])
    return int(reply["seq"])


class JsonBucket:
    """Raw bytes by key, with CAS; the one place that speaks the KV wire protocol.

    With an `intake` (a registered cluster's connection, which may not use JetStream) reads and
    writes are requests to the hub (store/intake.py).
    """

    def __init__(self, js: JetStreamContext, name: str, intake: IntakeClient | None = None) -> None:
        self.js = js
        self.name = name
        self.intake = intake
        self._kv: KeyValue | None = None

    @property
    def prefix(self) -> str:
        return kv_subject_prefix(self.name)

    @property
    def write_prefix(self) -> str:
        """Where writes go: through `$JS.<domain>.API.` when JetStream is another domain's (above)."""
        api = api_prefix(self.js)
        return self.prefix if api == DEFAULT_PREFIX else f"{api}.{self.prefix}"

    async def _bucket(self) -> KeyValue:
        if self._kv is None:
            self._kv = await self.js.key_value(self.name)
        return self._kv

    async def get(self, key: str) -> tuple[bytes, int] | None:
        if self.intake is not None:
            return await self.intake.get(self.name, key)
        kv = await self._bucket()
        try:
            entry = await kv.get(key, validate_keys=False)
        except KeyNotFoundError:  # nats-py reports a deleted key so too
            return None
        return entry.value or b"", entry.revision or 0

    async def _cas_publish(self, key: str, data: bytes, headers: dict[str, str]) -> int:
        operation = "delete" if headers.get(KV_OP) else "put"
        attributes = {"cnet.bucket": self.name, "cnet.key": key, "cnet.operation": operation}
        with span("store.write", kind=SpanKind.PRODUCER, attributes=attributes) as current:
            try:
                ack = await self.js.publish(self.write_prefix + key, data, headers=inject(headers))
            except APIError as err:
                if err.err_code in _WRONG_LAST_SEQUENCE:
                    current.set_attribute("cnet.conflict", True)
                    raise ConflictError(self.name, key, err.description or "") from err
                raise
            current.set_attribute("cnet.revision", int(ack.seq))
        return int(ack.seq)

    async def write(self, key: str, data: bytes, revision: int) -> int:
        """Writes iff the key's latest revision is `revision` (0: the key must not exist)."""
        if self.intake is not None:
            return await self.intake.put(self.name, key, data, revision)
        headers = {Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(revision), CONTENT_TYPE: JSON_CONTENT_TYPE}
        return await self._cas_publish(key, data, headers)

    async def write_many(self, writes: Sequence[tuple[str, bytes, int]]) -> list[int | StoreError]:
        """`write` of many keys at once: every CAS publish in flight together (nats-py's
        `publish_async`, bounded by its pending limit, which is the flow control), so a fan-out
        costs the bus's throughput, not one round trip per key. Each key's outcome in order: its
        new revision, or ConflictError for exactly the keys whose revision was stale (a revision
        0 write over a tombstone too; `create` resolves those). Any other failure is raised once
        every publish has settled."""
        if not writes:
            return []
        if self.intake is not None:
            return [await settled(self.write(key, data, revision)) for key, data, revision in writes]
        attributes: dict[str, AttributeValue] = {"cnet.bucket": self.name, "cnet.writes": len(writes)}
        with span("store.write_many", kind=SpanKind.PRODUCER, attributes=attributes) as current:
            carried = inject({CONTENT_TYPE: JSON_CONTENT_TYPE})
            publishes = [
                (self.write_prefix + key, data, {**carried, Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(revision)})
                for key, data, revision in writes
            ]
            out: list[int | StoreError] = []
            failure: BaseException | None = None
            for (key, _, _), ack in zip(writes, await publish_pipelined(self.js, publishes), strict=True):
                if isinstance(ack, int):
                    out.append(ack)
                elif isinstance(ack, APIError) and ack.err_code in _WRONG_LAST_SEQUENCE:
                    out.append(ConflictError(self.name, key, ack.description or ""))
                else:
                    failure = failure or ack
            current.set_attribute("cnet.conflicts", sum(isinstance(o, ConflictError) for o in out))
            if failure is not None:
                raise failure
        return out

    async def create(self, key: str, data: bytes) -> int:
        if self.intake is not None:  # the hub creates over a tombstone itself
            return await self.intake.put(self.name, key, data, 0)
        try:
            return await self.write(key, data, 0)
        except ConflictError:
            # A deleted key keeps a tombstone: creating over it must name the tombstone's revision.
            kv = await self._bucket()
            try:
                entry = await kv.get(key, validate_keys=False)
            except KeyNotFoundError as err:
                if err.entry is None:
                    raise
                try:
                    return await self.write(key, data, err.entry.revision or 0)
                except ConflictError:
                    raise AlreadyExistsError(self.name, key) from None
            raise AlreadyExistsError(self.name, key, (entry.value or b"", entry.revision or 0)) from None

    async def delete(self, key: str, revision: int | None = None) -> None:
        if self.intake is not None:
            await self.intake.delete(self.name, key, revision)
            return
        headers = {KV_OP: KV_DEL}
        if revision:
            headers[Header.EXPECTED_LAST_SUBJECT_SEQUENCE] = str(revision)
        await self._cas_publish(key, b"", headers)

    async def entries(self, key_filter: str = ">", headers_only: bool = False) -> list[tuple[str, bytes, int]]:
        """(key, value, revision) of every live key matching a subject filter, in one consumer pass.

        nats-py's `kv.keys(filters=...)` matches substrings over a watch of the whole bucket;
        this asks the server to filter, and returns values too so a list is not N round trips.
        """
        return (await self.snapshot(key_filter, headers_only))[0]

    async def snapshot(
        self, key_filter: str = ">", headers_only: bool = False
    ) -> tuple[list[tuple[str, bytes, int]], int]:
        """`entries()` and the stream sequence they are the state at: a watch from the next
        sequence misses nothing and repeats nothing (the stream's last message is always the
        last of its key, tombstones included, so the highest delivered sequence is the cut)."""
        position = (await self.js.stream_info(kv_stream(self.name))).state.last_seq
        config = ConsumerConfig(
            ack_policy=AckPolicy.NONE,
            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
            headers_only=headers_only,
            inactive_threshold=10.0,
            mem_storage=True,
        )
        sub = await self.js.pull_subscribe(self.prefix + key_filter, stream=kv_stream(self.name), config=config)
        out: list[tuple[str, bytes, int]] = []
        try:
            pending = (await sub.consumer_info()).num_pending or 0
            while pending > 0:
                msgs = await sub.fetch(min(pending, 1024), timeout=5.0)
                for msg in msgs:
                    pending = msg.metadata.num_pending or 0
                    position = max(position, msg.metadata.sequence.stream)
                    if is_deletion(msg.headers):
                        continue
                    out.append((msg.subject[len(self.prefix) :], msg.data, msg.metadata.sequence.stream))
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        return out, position

    async def keys(self, key_filter: str = ">") -> list[str]:
        return [key for key, _, _ in await self.entries(key_filter, headers_only=True)]


class StatusStore(Generic[T]):
    """Status (or any controller-owned record) by key, kept apart from spec."""

    def __init__(self, js: JetStreamContext, bucket: str, model: type[T], intake: IntakeClient | None = None) -> None:
        self.bucket = JsonBucket(js, bucket, intake)
        self.model = model

    def decode(self, data: bytes) -> T:
        return self.model.model_validate_json(data)

    async def get(self, key: str) -> Versioned[T] | None:
        found = await self.bucket.get(key)
        if found is None:
            return None
        return Versioned(self.decode(found[0]), found[1])

    async def put(self, key: str, value: T, revision: int) -> int:
        """CAS write; revision 0 creates."""
        data = value.model_dump_json(by_alias=True, exclude_none=True).encode()
        if revision == 0:
            return await self.bucket.create(key, data)
        return await self.bucket.write(key, data, revision)

    async def lost_to(self, key: str, conflict: ConflictError) -> Versioned[T] | None:
        """What a write that lost `conflict` lost to: as the conflict says, else read."""
        if conflict.current is None:
            return await self.get(key)
        return Versioned(self.decode(conflict.current[0]), conflict.current[1])

    async def put_if_changed(self, key: str, value: T) -> bool:
        """Writes unless the stored value already equals it (CAS on what was read); True if written."""
        return await self._replace(key, value, await self.get(key))

    async def create_or_replace(self, key: str, value: T) -> bool:
        """`put_if_changed` for a key most likely absent: created unread; if one is stored, compared
        with the record the refused create carried. True if written."""
        try:
            await self.put(key, value, 0)
        except ConflictError as conflict:
            return await self._replace(key, value, await self.lost_to(key, conflict))
        return True

    async def _replace(self, key: str, value: T, current: Versioned[T] | None) -> bool:
        if current is not None and current.value == value:
            return False
        await self.put(key, value, current.revision if current else 0)
        return True

    async def delete(self, key: str) -> None:
        await self.bucket.delete(key)


class ObjectStore(Generic[K]):
    """One kind's spec bucket: create, read, update and delete with Kubernetes semantics.

    The server side of the API lives here (uid, creationTimestamp, generation, and finalizers:
    a DELETE of an object with finalizers sets its deletionTimestamp, the update that drops the
    last one removes it; domain/finalizers.py), so that the hub, the bridge and controllers that
    write objects all agree on them.
    """

    def __init__(self, js: JetStreamContext, info: KindInfo, intake: IntakeClient | None = None) -> None:
        self.info = info
        self.model: type[K] = info.model  # type: ignore[assignment]
        self.bucket = JsonBucket(js, info.bucket, intake)

    def key(self, namespace: str | None, name: str) -> str:
        return object_key(namespace if self.info.namespaced else None, name)

    def key_of(self, obj: KubeObject) -> str:
        return self.key(obj.metadata.namespace, obj.name)

    def decode(self, data: bytes, revision: int, key: str = "") -> K:
        """The stored object; UndecodableError (logged and counted) for a value that does not
        decode, so that one bad record is reported where it is met instead of breaking a read."""
        try:
            obj = self.model.model_validate_json(data)
        except (ValidationError, ValueError) as err:
            UNDECODABLE[self.info.bucket] += 1
            detail = str(err).splitlines()[-1][:300] if str(err) else type(err).__name__
            log.warning("store.undecodable", bucket=self.info.bucket, key=key, revision=revision, error=detail)
            raise UndecodableError(self.info.bucket, key, revision, detail) from None
        obj.metadata.resource_version = str(revision)
        return obj

    def decodable(self, entries: list[tuple[str, bytes, int]]) -> list[tuple[str, K]]:
        """(key, object) of each entry that decodes; the others are reported by `decode` and left out."""
        out = []
        for key, data, revision in entries:
            with contextlib.suppress(UndecodableError):
                out.append((key, self.decode(data, revision, key)))
        return out

    @staticmethod
    def encode(obj: KubeObject) -> bytes:
        """What is stored: the object without status (its own bucket) and resourceVersion (the
        KV revision), serialized in one pass rather than from a copy."""
        exclude: dict[str, Any] = {"metadata": {"resource_version"}}
        if "status" in type(obj).model_fields:
            exclude["status"] = True
        return obj.model_dump_json(by_alias=True, exclude_none=True, exclude=exclude).encode()

    async def get(self, namespace: str | None, name: str) -> K | None:
        key = self.key(namespace, name)
        found = await self.bucket.get(key)
        return None if found is None else self.decode(*found, key)

    async def lost_to(self, namespace: str | None, name: str, conflict: ConflictError) -> K | None:
        """What a write that lost `conflict` lost to: as the conflict says, else read."""
        if conflict.current is None:
            return await self.get(namespace, name)
        return self.decode(*conflict.current, self.key(namespace, name))

    async def require(self, namespace: str | None, name: str) -> K:
        obj = await self.get(namespace, name)
        if obj is None:
            raise ObjectNotFoundError(self.info.plural, self.key(namespace, name))
        return obj

    async def list(self, namespace: str | None = None) -> list[K]:
        key_filter = f"{namespace}.>" if namespace and self.info.namespaced else ">"
        return [obj for _, obj in self.decodable(sorted(await self.bucket.entries(key_filter)))]

    async def create(self, obj: K) -> K:
        obj = self._created(obj)
        revision = await self.bucket.create(self.key_of(obj), self.encode(obj))
        obj.metadata.resource_version = str(revision)
        return obj

    async def update(self, obj: K, current: K | None = None) -> K:
        """CAS on obj.metadata.resourceVersion; keeps uid/creationTimestamp, bumps generation on spec change."""
        key = self.key_of(obj)
        current = current or await self.get(obj.metadata.namespace, obj.name)
        if current is None:
            raise ObjectNotFoundError(self.info.plural, key)
        staged = self._updated(obj, current)
        if staged is None:
            return current
        obj, data, expected = staged
        if obj.metadata.deletion_timestamp is not None and not held(obj.metadata):
            await self.bucket.delete(key, expected)  # the last finalizer went: so does the object
            return obj
        obj.metadata.resource_version = str(await self.bucket.write(key, data, expected))
        return obj

    async def write_all(self, writes: Sequence[tuple[K, K | None]]) -> Sequence[K | StoreError]:
        """`create` (no current) or `update` (on the current it was read as) of each object,
        their writes pipelined (`JsonBucket.write_many`); each outcome in order: the stored
        object, or the error of that one object (ConflictError, AlreadyExistsError,
        InvalidError), the others written regardless."""
        out: dict[int, K | StoreError] = {}
        staged: list[tuple[int, K, bytes, int]] = []
        for index, (obj, current) in enumerate(writes):
            if current is None:
                created = self._created(obj)
                staged.append((index, created, self.encode(created), 0))
                continue
            try:
                update = self._updated(obj, current)
            except StoreError as err:
                out[index] = err
                continue
            if update is None:
                out[index] = current
            elif update[0].metadata.deletion_timestamp is not None and not held(update[0].metadata):
                out[index] = await settled(self.update(obj, current))  # a delete, not a write
            else:
                staged.append((index, *update))
        revisions = await self.bucket.write_many([(self.key_of(obj), data, rev) for _, obj, data, rev in staged])
        for (index, obj, data, expected), revision in zip(staged, revisions, strict=True):
            if isinstance(revision, ConflictError) and expected == 0:  # perhaps over a tombstone
                revision = await settled(self.bucket.create(self.key_of(obj), data))
            if isinstance(revision, StoreError):
                out[index] = revision
            else:
                obj.metadata.resource_version = str(revision)
                out[index] = obj
        return [out[index] for index in range(len(writes))]

    @staticmethod
    def _own_metadata(obj: K) -> K:
        """A copy of `obj` whose metadata may be set without changing `obj`; the rest is shared
        (objects are never changed in place), so a write costs no deep copy."""
        return obj.model_copy(update={"metadata": obj.metadata.model_copy()})

    def _created(self, obj: K) -> K:
        """`obj` as created: uid, creationTimestamp, generation 1, not deleting."""
        obj = self._own_metadata(obj)
        meta = obj.metadata
        meta.uid = meta.uid or str(uuid.uuid4())
        meta.creation_timestamp = meta.creation_timestamp or utcnow()
        meta.deletion_timestamp = None
        meta.generation = 1
        return obj

    def _updated(self, obj: K, current: K) -> tuple[K, bytes, int] | None:
        """`obj` as an update of `current` would store it, its encoding and the revision the
        write expects; None when that stores nothing new. Raises ConflictError (stale) and
        InvalidError (a finalizer added while deleting)."""
        key = self.key_of(obj)
        expected = int(obj.metadata.resource_version or current.metadata.resource_version or 0)
        if expected != int(current.metadata.resource_version or 0):
            # Stale even if the content is unchanged: the caller decided on an old version.
            raise ConflictError(self.info.plural, key, f"expected revision {expected}")
        obj = self._own_metadata(obj)
        meta = obj.metadata
        meta.uid = current.metadata.uid
        meta.creation_timestamp = current.metadata.creation_timestamp
        meta.deletion_timestamp = current.metadata.deletion_timestamp
        refused = added_while_deleting(current.metadata, meta)
        if refused is not None:
            raise InvalidError(self.info.plural, key, f"metadata.finalizers: Forbidden: {refused}")
        generation = current.metadata.generation or 1
        if _spec_of(obj) != _spec_of(current):
            generation += 1
        meta.generation = generation
        data = self.encode(obj)
        return None if data == self.encode(current) else (obj, data, expected)

    async def apply(self, obj: K) -> K:
        """Create, or replace the latest version (what `kubectl apply` means to a user); a lost
        compare-and-set is retried, as often as it takes (someone else wrote: read again)."""
        while True:
            current = await self.get(obj.metadata.namespace, obj.name)
            if current is None:
                try:
                    return await self.create(obj)
                except AlreadyExistsError:
                    continue
            replacement = self._own_metadata(obj)
            replacement.metadata.resource_version = current.metadata.resource_version
            if replacement.metadata.finalizers is None:  # not named: kept, as kubectl apply's patch keeps them
                replacement.metadata.finalizers = current.metadata.finalizers
            try:
                return await self.update(replacement, current)
            except ConflictError:
                continue

    async def delete(self, namespace: str | None, name: str, resource_version: str | None = None) -> bool:
        """Deletes, or marks when finalizers hold it (`delete_object`); False when there was nothing."""
        return await self.delete_object(namespace, name, resource_version) is not None

    async def delete_object(
        self, namespace: str | None, name: str, resource_version: str | None = None
    ) -> K | None:
        """Deletes (CAS on `resource_version`, else on the latest); None when there was nothing.
        Returns the object as it was, or, when finalizers hold it, as it is now: marked with a
        deletionTimestamp (already marked: unchanged), left for its finalizers' owners."""
        key = self.key(namespace, name)
        found = await self.bucket.get(key)
        if found is None:
            return None
        revision = int(resource_version) if resource_version else found[1]
        obj = self.decode(found[0], found[1], key)
        if not held(obj.metadata):
            await self.bucket.delete(key, revision)
            return obj
        if obj.metadata.deletion_timestamp is not None:
            return obj
        marked = self._own_metadata(obj)
        marked.metadata.deletion_timestamp = utcnow()
        marked.metadata.resource_version = str(await self.bucket.write(key, self.encode(marked), revision))
        return marked


def _spec_of(obj: KubeObject) -> object:
    data = obj.to_json_dict()
    for field in ("apiVersion", "kind", "metadata", "status"):
        data.pop(field, None)
    return data

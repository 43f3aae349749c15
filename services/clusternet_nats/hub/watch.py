"""`?watch=true`: kube-apiserver's chunked stream of WatchEvents, from the KV streams.

A kind's view is made of up to three buckets (spec; status; bindings for Subscriptions), each its
own stream, so a position in a watch is one revision per bucket. Lists, bookmarks and watch events
carry it as the resourceVersion `<spec>.<status>.<bindings>` (just `<spec>` for a kind with one
bucket, where it equals the object's KV revision), which client-go treats as the opaque string it
is; resuming from it misses nothing. A plain object revision (what GET returns) resumes the spec
stream exactly and the others from now. Writes take either form (the spec part is the CAS).

A change to status or bindings is a MODIFIED of the object as users see it. An object entering
or leaving a selector is ADDED or DELETED, as on kube-apiserver. Unset or "0": the current state
as ADDED first. Too old: `410 Gone` (Expired). The stream ends on `timeoutSeconds`, client
disconnect, and hub shutdown.

Resuming, the client is taken to hold what matches now and was not changed since its position. An
object deleted after that position and before this watch's read is not in that read, and its bucket
keeps only the deletion marker (history 1), so whether the client holds it is unknown: its DELETED,
carrying only its name, is sent whenever the field selector takes that name. A client ignores the
deletion of an object it does not hold, but would never hear again of one it missed (`cnet wait
--for=delete` waited out its timeout so).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import structlog
from aiohttp import web
from clusternet_nats.api import KindInfo, KubeObject
from clusternet_nats.hub.errors import ApiError, bad_request
from clusternet_nats.hub.selectors import ObjectSelector
from clusternet_nats.hub.tables import table, table_version
from clusternet_nats.store.cancelling import cancel_and_wait
from clusternet_nats.store.errors import UndecodableError
from clusternet_nats.store.keys import namespace_filter, object_key, split_key
from clusternet_nats.store.views import ObjectViews
from clusternet_nats.store.watch import BucketGone, Change, bucket_revision, watch_bucket
from nats.js import JetStreamContext

log = structlog.get_logger(__name__)

BOOKMARK_SECONDS = 30.0
"""How often a watch with `allowWatchBookmarks=true` is told its position (kube: about a minute)."""
_TICK_SECONDS = 1.0  # how soon a disconnected client or a shutdown is noticed on an idle watch
_BATCH = 64  # changes whose objects are read at once


def format_version(positions: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in positions)


def spec_revision(resource_version: str) -> str:
    """The spec bucket's revision in a resourceVersion of either form (what a write compares)."""
    return resource_version.partition(".")[0]


def parse_version(text: str, buckets: int) -> list[int | None]:
    """A position per bucket (None: from now); a 400 naming resourceVersion if it is not ours."""
    parts = text.split(".")
    try:
        values = [int(part) for part in parts]
    except ValueError:
        values = []
    if not values or len(values) not in (1, buckets) or any(v < 0 for v in values):
        raise bad_request(f"invalid resource version {text!r}", "resourceVersion")
    return [*values, *[None] * (buckets - len(values))]


async def read_selected(
    views: ObjectViews, info: KindInfo, namespace: str | None, selector: ObjectSelector
) -> tuple[list[KubeObject], tuple[int, ...]]:
    """The selected objects and the position they are the state at; one read, not a list, when
    the selector names one object (`kubectl get X -w`, `kubectl delete`'s wait)."""
    name = selector.name
    if name and (namespace or not info.namespaced):
        obj, positions = await views.get_at(info, namespace, name)
        return ([obj] if obj is not None and selector.matches(obj) else []), positions
    objects, positions = await views.list_at(info, namespace)
    return [obj for obj in objects if selector.matches(obj)], positions


def expired(err: BucketGone) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {err.after} ({err.first - 1})")


class Watches:
    """Serves watches over one ObjectViews; `stop()` ends them all (hub shutdown)."""

    def __init__(self, js: JetStreamContext, views: ObjectViews) -> None:
        self.js, self.views = js, views
        self._stopping = asyncio.Event()

    async def stop(self, _app: web.Application | None = None) -> None:
        self._stopping.set()

    async def serve(
        self, request: web.Request, info: KindInfo, namespace: str | None, selector: ObjectSelector
    ) -> web.StreamResponse:
        timeout = _timeout(request)
        version = request.query.get("resourceVersion", "")
        buckets = self.views.buckets(info)
        name = selector.name
        key_filter = (
            self.views.store(info).key(namespace, name)
            if name and (namespace or not info.namespaced)
            else namespace_filter(namespace if info.namespaced else None)
        )
        stream = _Stream(info, selector, table_version(request.headers.get("Accept", "")))
        if version in ("", "0"):
            initial, positions = await read_selected(self.views, info, namespace, selector)
        else:
            parsed = parse_version(version, len(buckets))
            positions = tuple(
                [
                    p if p is not None else await bucket_revision(self.js, bucket)
                    for p, bucket in zip(parsed, buckets, strict=True)
                ]
            )
            objects, _ = await read_selected(self.views, info, namespace, selector)
            stream.prime([o for o in objects if int(o.metadata.resource_version or 0) <= positions[0]])
            initial = []
        async with contextlib.AsyncExitStack() as stack:
            try:
                sources = [
                    await stack.enter_async_context(watch_bucket(self.js, bucket, key_filter, after))
                    for bucket, after in zip(buckets, positions, strict=True)
                ]
            except BucketGone as err:
                raise expired(err) from None
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            stream.positions = list(positions)
            with contextlib.suppress(ConnectionResetError):
                for obj in initial:
                    await stream.send(response, stream.event(obj))
                bookmarks = request.query.get("allowWatchBookmarks", "").lower() in ("true", "1")
                if bookmarks and initial:  # where the initial state ends
                    await stream.send(response, stream.bookmark())
                await self._follow(request, response, stream, sources, timeout, bookmarks)
            return response

    async def _follow(
        self,
        request: web.Request,
        response: web.StreamResponse,
        stream: _Stream,
        sources: list[AsyncIterator[Change]],
        timeout: float | None,
        bookmarks: bool,
    ) -> None:
        queue: asyncio.Queue[tuple[int, Change]] = asyncio.Queue(maxsize=1024)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        next_bookmark = loop.time() + BOOKMARK_SECONDS
        feeders = [asyncio.create_task(_feed(index, source, queue)) for index, source in enumerate(sources)]
        try:
            while not self._stopping.is_set():
                now = loop.time()
                if deadline is not None and now >= deadline:
                    break
                transport = request.transport
                if transport is None or transport.is_closing():
                    break
                if any(feeder.done() for feeder in feeders):  # a stream failed: the client watches again
                    break
                if bookmarks and now >= next_bookmark:
                    await stream.send(response, stream.bookmark())
                    next_bookmark = now + BOOKMARK_SECONDS
                wait = min(_TICK_SECONDS, *(t - now for t in (deadline, next_bookmark) if t is not None))
                try:
                    async with asyncio.timeout(max(wait, 0.0)):
                        batch = [await queue.get()]
                except TimeoutError:
                    continue
                while len(batch) < _BATCH and not queue.empty():
                    batch.append(queue.get_nowait())
                # The objects are read concurrently; the events go out in the streams' order.
                try:
                    objects = await asyncio.gather(*(self._read(stream.info, i, change) for i, change in batch))
                except Exception as err:  # the store failed mid-stream: say so, as kube-apiserver, and end
                    log.warning("watch.read_failed", kind=stream.info.kind, error=repr(err))
                    status = ApiError(500, "InternalError", f"the watch could not read the store: {err!r}")
                    await response.write(json.dumps({"type": "ERROR", "object": status.body()}).encode() + b"\n")
                    break
                for (index, change), obj in zip(batch, objects, strict=True):
                    event = stream.apply(index, change, obj)
                    if event is not None:
                        await stream.send(response, event)
        finally:
            for error in await cancel_and_wait(feeders):
                log.warning("watch.stream_failed", kind=stream.info.kind, error=repr(error))

    async def _read(self, info: KindInfo, index: int, change: Change) -> KubeObject | None:
        """The object as users see it after `change`; None for a deletion, a status without object
        or a value that does not decode (reported by the store, and left out as lists leave it)."""
        try:
            if index == 0:
                if change.data is None:
                    return None
                obj = self.views.store(info).decode(change.data, change.revision, change.key)
                return await self.views.view(info, obj)
            namespace, name = split_key(change.key, info.namespaced)
            return await self.views.get(info, namespace or None, name)
        except UndecodableError:
            return None


async def _feed(index: int, source: AsyncIterator[Change], queue: asyncio.Queue[tuple[int, Change]]) -> None:
    async for change in source:
        await queue.put((index, change))


def _timeout(request: web.Request) -> float | None:
    text = request.query.get("timeoutSeconds")
    if text is None:
        return None
    try:
        seconds = int(text)
    except ValueError:
        raise bad_request(f"must be a whole number of seconds, not {text!r}", "timeoutSeconds") from None
    return float(max(seconds, 0))


class _Stream:
    """One watch's state: where it is in each bucket and which objects the client holds."""

    def __init__(self, info: KindInfo, selector: ObjectSelector, table_version: str | None) -> None:
        self.info, self.selector = info, selector
        self.table_version = table_version  # objects as one-row Tables (`kubectl get -w`), if asked
        self._columns_sent = False
        self.positions: list[int] = []
        self._held: dict[str, dict[str, Any]] = {}  # store key -> the object last sent
        self._known: set[str] | None = None  # resumed: store keys whose holding is certain

    def prime(self, objects: list[KubeObject]) -> None:
        """Objects the client holds already (it resumes from a list or an earlier watch)."""
        for obj in objects:
            self._held[self._key(obj)] = obj.to_json_dict()
        self._known = set(self._held)

    def _key(self, obj: KubeObject) -> str:
        """The object's store key, as its changes name it."""
        return object_key(obj.metadata.namespace if self.info.namespaced else None, obj.name)

    def _versioned(self, body: dict[str, Any]) -> dict[str, Any]:
        body.setdefault("metadata", {})["resourceVersion"] = format_version(tuple(self.positions))
        return body

    def event(self, obj: KubeObject) -> dict[str, Any]:
        """ADDED for an object of the initial state."""
        body = obj.to_json_dict()
        self._held[self._key(obj)] = body
        return {"type": "ADDED", "object": body}

    def apply(self, index: int, change: Change, obj: KubeObject | None) -> dict[str, Any] | None:
        """The event `change` makes for this client (None: nothing it needs to hear)."""
        self.positions[index] = change.revision
        # A spec change (a write or a deletion) settles what a resumed client holds of the key.
        unheard = index == 0 and self._settle(change.key)
        if obj is not None:
            return self.changed(obj)
        if index == 0 and change.data is None:
            return self.deleted(change.key, unheard)
        return None  # status of an object not (or no longer) there

    def _settle(self, key: str) -> bool:
        """Marks a resumed client's holding of `key` as known; True if it was not until now."""
        if self._known is None or key in self._known:
            return False
        self._known.add(key)
        return True

    def changed(self, obj: KubeObject) -> dict[str, Any] | None:
        key = self._key(obj)
        body = self._versioned(obj.to_json_dict())
        if not self.selector.matches(obj):
            return {"type": "DELETED", "object": body} if self._held.pop(key, None) is not None else None
        kind = "MODIFIED" if key in self._held else "ADDED"
        self._held[key] = body
        return {"type": kind, "object": body}

    def deleted(self, key: str, unheard: bool) -> dict[str, Any] | None:
        """DELETED of an object the client holds, or may (`unheard`: it was gone before this watch read)."""
        held = self._held.pop(key, None)
        if held is None:
            namespace, name = split_key(key, self.info.namespaced)
            if not unheard or not self.selector.may_match(namespace, name):
                return None
            metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
            held = {"apiVersion": self.info.api_version, "kind": self.info.kind, "metadata": metadata}
        return {"type": "DELETED", "object": self._versioned(held)}

    def bookmark(self) -> dict[str, Any]:
        body = {"apiVersion": self.info.api_version, "kind": self.info.kind, "metadata": {}}
        return {"type": "BOOKMARK", "object": self._versioned(body)}

    async def send(self, response: web.StreamResponse, event: dict[str, Any]) -> None:
        if self.table_version is not None:
            event = {**event, "object": self._as_table(event["object"], event["type"] == "BOOKMARK")}
        await response.write(json.dumps(event, separators=(",", ":")).encode() + b"\n")

    def _as_table(self, body: dict[str, Any], bookmark: bool) -> dict[str, Any]:
        """As kube-apiserver sends Tables in a watch: column definitions in the first one only."""
        assert self.table_version is not None
        if bookmark:
            api_version = f"meta.k8s.io/{self.table_version}"
            return {"kind": "Table", "apiVersion": api_version, "metadata": body["metadata"], "rows": []}
        converted = table(body, self.table_version)
        if self._columns_sent:
            converted["columnDefinitions"] = []
        self._columns_sent = True
        return converted

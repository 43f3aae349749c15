"""A Kubernetes reflector: list a collection, then watch it from the listed resourceVersion.

The cache it keeps and the keys it hands to handlers are what level-triggered reconcilers need
(the same contract as `store.Informer`: handlers only enqueue keys). A watch that ends (the
server's timeout, a dropped connection, an apiserver restart) resumes from the last
resourceVersion seen, kept fresh by bookmarks, so nothing is listed twice; a `410 Gone` (the
version was compacted away) or any other refusal by the server makes it list again, and then
keys that vanished meanwhile are reported as deletions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import structlog
from clusternet_nats.kube.rest import Json, KubeApi, KubeError

Handler = Callable[[str], None]
KeyOf = Callable[[Json], str]

_GONE = 410
_UNREACHABLE = 0
_WATCH_SECONDS = "300"
_RETRY_SECONDS = 1.0

log = structlog.get_logger(__name__)


class Gone(Exception):
    """The resourceVersion to resume from is too old: list again."""


class Reflector:
    """Mirror of one collection (`/apis/<g>/<v>/<plural>` across namespaces) keyed by `key_of`."""

    def __init__(self, api: KubeApi, path: str, key_of: KeyOf, query: Mapping[str, str] | None = None) -> None:
        self.api = api
        self.path = path
        self.key_of = key_of
        self.query = dict(query or {})
        self.resource_version = ""
        self.lists = 0
        """How many times it listed (1 plus one per 410 Gone): watches that end are resumed."""
        self._cache: dict[str, Json] = {}
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        self._log = log.bind(path=path)

    def get(self, key: str) -> Json | None:
        return self._cache.get(key)

    def keys(self) -> list[str]:
        return list(self._cache)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    async def run(self) -> None:
        """Lists and watches until cancelled; errors are logged and retried."""
        while True:
            try:
                if not self.resource_version:
                    await self._list()
                await self._watch()
            except Gone:
                self._log.info("reflector.gone", resource_version=self.resource_version)
                self.resource_version = ""
            except KubeError as err:
                self._log.warning("reflector.failed", error=str(err), status=err.status)
                if err.status != _UNREACHABLE:
                    self.resource_version = ""  # the server refused this version: list afresh
                await asyncio.sleep(_RETRY_SECONDS)

    async def _list(self) -> None:
        listing = await self.api.request("GET", self.path, self.query)
        # Items of a list carry no apiVersion and kind; watch events do. Cache them alike.
        kind = str(listing.get("kind", "")).removesuffix("List")
        items = [{"apiVersion": listing.get("apiVersion"), "kind": kind, **obj} for obj in listing.get("items") or []]
        fresh = {self.key_of(obj): obj for obj in items}
        vanished = set(self._cache) - set(fresh)
        changed = [key for key, obj in fresh.items() if self._cache.get(key) != obj]
        self._cache = fresh
        self.resource_version = str(listing["metadata"]["resourceVersion"])
        self.lists += 1
        self._synced.set()
        self._log.debug("reflector.listed", objects=len(fresh), resource_version=self.resource_version)
        for key in [*changed, *vanished]:
            self._notify(key)

    async def _watch(self) -> None:
        query = {
            **self.query,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": _WATCH_SECONDS,
        }
        async for event in self.api.stream(self.path, query):
            self._apply(event)

    def _apply(self, event: Json) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == _GONE:
                raise Gone()
            raise KubeError("WATCH", self.path, int(obj.get("code") or 0), str(obj.get("message", "")))
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self.resource_version = str(version)
        if kind == "BOOKMARK":
            return
        key = self.key_of(obj)
        if kind == "DELETED":
            self._cache.pop(key, None)
        else:
            self._cache[key] = obj
        self._notify(key)

    def _notify(self, key: str) -> None:
        for handler in self._handlers:
            handler(key)

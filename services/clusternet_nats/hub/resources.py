"""Kubernetes-style REST paths for every kind in the registry (the shadow API is in shadow.py).

Routes are generic (`/apis/{group}/{version}/...`) and resolved against the registry, so a kind
added to the API package is served without touching the hub. Cluster-scoped and namespaced
kinds share the same handlers; a path of the wrong scope is a 404, as on kube-apiserver.
Verbs: list (label and field selectors, `limit`/`continue` over a snapshot of the first page's
list, so paging is consistent), watch (hub/watch.py), get, create, update, patch (hub/patch.py,
hub/apply.py), delete (hub/deletion.py), and the `status` subresource where a kind has a status
bucket; every write takes `?dryRun=All`.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web
from clusternet_nats.api import KindInfo, KubeObject, all_kinds
from clusternet_nats.hub.apply import server_side_apply
from clusternet_nats.hub.bodies import agree_with_path, dry_run, parse, read_body
from clusternet_nats.hub.deletion import delete_options, in_use_warning
from clusternet_nats.hub.errors import ApiError, bad_request, no_such_path, not_found
from clusternet_nats.hub.patch import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, apply_patch, unsupported
from clusternet_nats.hub.selectors import object_selector
from clusternet_nats.hub.watch import Watches, format_version, read_selected, spec_revision
from clusternet_nats.hub.writes import Writer, Written
from clusternet_nats.store.errors import UndecodableError
from clusternet_nats.store.views import ObjectViews

_BASE = "/apis/{group}/{version}"
_NAMESPACED = _BASE + "/namespaces/{namespace}/{plural}"
_PATCH_RETRIES = 16  # a patch without a resourceVersion is re-applied to the latest on a lost CAS
PAGE_SNAPSHOT_SECONDS = 300.0
PAGE_SNAPSHOT_BYTES = 256 * 1024 * 1024  # the JSON of the lists kept for paging, at most


def object_response(obj: KubeObject, status: int = 200) -> web.Response:
    return web.Response(body=obj.to_json(), status=status, content_type="application/json")


def written_response(written: Written) -> web.Response:
    return object_response(written.obj, 201 if written.created else 200)


def _watching(request: web.Request) -> bool:
    return request.query.get("watch", "").lower() in ("true", "1")


class _Pages:
    """Lists being read page by page: the first page's whole list is kept (a few minutes, within a
    memory budget) so later pages are of the same state, as etcd's snapshot gives kube-apiserver.
    A snapshot answers only the request it was made for (path and selectors, which is what was
    authorized). A token that outlived it is a 410 Expired; client-go then lists again."""

    def __init__(self) -> None:
        self._lists: OrderedDict[str, tuple[float, str, list[bytes], str]] = OrderedDict()
        self._bytes = 0

    @staticmethod
    def _request(request: web.Request) -> str:
        query = request.query
        return f"{request.path}?{query.get('labelSelector', '')}&{query.get('fieldSelector', '')}"

    def keep(self, request: web.Request, items: list[bytes], version: str) -> str:
        now = time.monotonic()
        size = sum(len(item) for item in items)
        while self._lists and (self._bytes + size > PAGE_SNAPSHOT_BYTES or next(iter(self._lists.values()))[0] < now):
            self._bytes -= sum(len(item) for item in self._lists.popitem(last=False)[1][2])
        snapshot = secrets.token_urlsafe(12)
        self._lists[snapshot] = (now + PAGE_SNAPSHOT_SECONDS, self._request(request), items, version)
        self._bytes += size
        return snapshot

    def get(self, request: web.Request, snapshot: str) -> tuple[list[bytes], str]:
        found = self._lists.get(snapshot)
        if found is None or found[0] < time.monotonic() or found[1] != self._request(request):
            raise ApiError(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter.",
            )
        return found[2], found[3]


def _continue_token(snapshot: str, start: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"s": snapshot, "i": start}).encode()).decode()


def _read_continue(token: str) -> tuple[str, int]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(data["s"]), int(data["i"])
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise bad_request("invalid continue token", "continue") from None


def _limit(request: web.Request) -> int:
    text = request.query.get("limit", "0")
    try:
        limit = int(text)
    except ValueError:
        raise bad_request(f"must be a whole number, not {text!r}", "limit") from None
    return max(limit, 0)


Overlay = Callable[[KubeObject], None]
"""Adds to an object read what the hub knows of it beyond the store (a ManagedCluster's last
heartbeat: hub/clusterhealth), by kind."""


class Resources:
    def __init__(self, views: ObjectViews, overlays: Mapping[str, Overlay] | None = None) -> None:
        self.views = views
        self.overlays = dict(overlays or {})
        self.writer = Writer(views)
        self.watches = Watches(views.js, views)
        self._pages = _Pages()
        self._kinds = {(info.group, info.version, info.plural): info for info in all_kinds()}

    def add_routes(self, app: web.Application) -> None:
        router = app.router
        for collection in (_BASE + "/{plural}", _NAMESPACED):
            router.add_get(collection, self.list)
            router.add_post(collection, self.create)
            item = collection + "/{name}"
            router.add_get(item, self.get)
            router.add_put(item, self.replace)
            router.add_patch(item, self.patch)
            router.add_delete(item, self.delete)
            router.add_get(item + "/status", self.get_status)
            router.add_put(item + "/status", self.replace_status)
            router.add_patch(item + "/status", self.patch_status)
        app.on_shutdown.append(self.watches.stop)

    def _kind(self, request: web.Request, *, one_namespace: bool) -> tuple[KindInfo, str | None]:
        """The kind a path names and its namespace; `one_namespace`: the path must name one if namespaced."""
        info = self._kinds.get(
            (request.match_info["group"], request.match_info["version"], request.match_info["plural"])
        )
        namespace = request.match_info.get("namespace")
        if info is None or (namespace is not None and not info.namespaced):
            raise no_such_path()
        if one_namespace and info.namespaced and namespace is None:
            raise no_such_path()
        return info, namespace

    def _status_kind(self, request: web.Request) -> tuple[KindInfo, str | None]:
        info, namespace = self._kind(request, one_namespace=True)
        if len(self.views.buckets(info)) == 1:  # no status kept apart: no status subresource
            raise no_such_path()
        return info, namespace

    async def list(self, request: web.Request) -> web.StreamResponse:
        info, namespace = self._kind(request, one_namespace=False)
        selector = object_selector(request.query)
        if _watching(request):
            return await self.watches.serve(request, info, namespace, selector)
        limit, token = _limit(request), request.query.get("continue")
        if token:
            snapshot, start = _read_continue(token)
            items, version = self._pages.get(request, snapshot)
        else:
            objects, positions = await read_selected(self.views, info, namespace, selector)
            items = [self._shown(info, obj).to_json() for obj in objects]
            version, snapshot, start = format_version(positions), "", 0
        metadata: dict[str, Any] = {"resourceVersion": version}
        page = items[start : start + limit] if limit else items[start:]
        if limit and start + limit < len(items):
            snapshot = snapshot or self._pages.keep(request, items, version)
            metadata["continue"] = _continue_token(snapshot, start + limit)
            metadata["remainingItemCount"] = len(items) - start - limit
        # The items are pydantic's JSON already: joined, not parsed and dumped again.
        head = {"apiVersion": info.api_version, "kind": f"{info.kind}List", "metadata": metadata}
        body = json.dumps(head, separators=(",", ":")).encode()[:-1] + b',"items":[' + b",".join(page) + b"]}"
        return web.Response(body=body, content_type="application/json")

    async def get(self, request: web.Request) -> web.StreamResponse:
        info, namespace = self._kind(request, one_namespace=True)
        name = request.match_info["name"]
        if _watching(request):  # the deprecated form of a watch on one object
            selector = object_selector({"fieldSelector": f"metadata.name={name}"})
            return await self.watches.serve(request, info, namespace, selector)
        return object_response(self._shown(info, await self._current(info, namespace, name)))

    def _shown(self, info: KindInfo, obj: KubeObject) -> KubeObject:
        if (overlay := self.overlays.get(info.kind)) is not None:
            overlay(obj)
        return obj

    async def _current(self, info: KindInfo, namespace: str | None, name: str) -> KubeObject:
        obj = await self.views.get(info, namespace, name)
        if obj is None:
            raise not_found(info, name)
        return obj

    async def create(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        obj = parse(agree_with_path(await read_body(request), info, namespace, None))
        return written_response(await self.writer.create(info, obj, dry_run(request)))

    async def replace(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        obj = parse(agree_with_path(await read_body(request), info, namespace, request.match_info["name"]))
        return written_response(await self.writer.replace(info, obj, dry_run(request)))

    async def patch(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        return await self._patch(request, info, namespace, status=False)

    async def _patch(self, request: web.Request, info: KindInfo, namespace: str | None, status: bool) -> web.Response:
        """Applies the patch to the latest object and writes it with a CAS on that version; a lost
        CAS applies it again to the newer one, unless the patch itself names a resourceVersion."""
        name, content_type, raw = request.match_info["name"], request.content_type, await request.read()
        if content_type == APPLY_PATCH:
            if status:
                raise ApiError(415, "UnsupportedMediaType", "server-side apply of the status subresource is not "
                               f"supported here; use {MERGE_PATCH} or {JSON_PATCH}")
            return written_response(await server_side_apply(request, self.writer, info, namespace, name, raw))
        if content_type not in (MERGE_PATCH, JSON_PATCH):
            raise unsupported(content_type)
        for attempt in range(_PATCH_RETRIES):
            current = await self._current(info, namespace, name)
            patched = await apply_patch(current.to_json_dict(), content_type, raw)
            named = (patched.get("metadata") or {}).get("resourceVersion")
            pinned = named is not None and named != current.metadata.resource_version
            obj = parse(agree_with_path(patched, info, namespace, name))
            obj.metadata.resource_version = spec_revision(str(named)) if pinned else current.metadata.resource_version
            if current.metadata.finalizers and obj.metadata.finalizers is None:
                obj.metadata.finalizers = []  # the patch removed them (`finalizers: null`): not "not named"
            try:
                if status:
                    return object_response(await self.writer.replace_status(info, obj, dry_run(request)))
                return written_response(await self.writer.replace(info, obj, dry_run(request)))
            except ApiError as err:
                if err.reason != "Conflict" or pinned or attempt == _PATCH_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    async def delete(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        options = await delete_options(request)
        try:
            obj = await self.writer.delete(info, namespace, request.match_info["name"], options)
        except UndecodableError as err:
            return web.json_response(await self.writer.delete_undecodable(info, err, options))
        response = object_response(obj)
        if (warning := await in_use_warning(self.views, obj)) is not None:
            response.headers["Warning"] = warning
        return response

    async def get_status(self, request: web.Request) -> web.Response:
        info, namespace = self._status_kind(request)
        return object_response(self._shown(info, await self._current(info, namespace, request.match_info["name"])))

    async def replace_status(self, request: web.Request) -> web.Response:
        info, namespace = self._status_kind(request)
        obj = parse(agree_with_path(await read_body(request), info, namespace, request.match_info["name"]))
        return object_response(await self.writer.replace_status(info, obj, dry_run(request)))

    async def patch_status(self, request: web.Request) -> web.Response:
        info, namespace = self._status_kind(request)
        return await self._patch(request, info, namespace, status=True)


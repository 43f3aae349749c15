"""Kubernetes-style REST paths for every kind in the registry (the shadow API is in shadow.py).

Routes are generic (`/apis/{group}/{version}/...`) and resolved against the registry, so a kind
added to the API package is served without touching the hub. Cluster-scoped and namespaced
kinds share the same handlers; a path of the wrong scope is a 404, as on kube-apiserver.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from clusternet_nats.api import KindInfo, KubeObject, all_kinds
from clusternet_nats.hub.bodies import agree_with_path, dry_run, parse, read_body
from clusternet_nats.hub.errors import bad_request, no_such_path, not_found
from clusternet_nats.hub.selectors import parse_label_selector
from clusternet_nats.hub.writes import Writer, Written
from clusternet_nats.store.views import ObjectViews

_BASE = "/apis/{group}/{version}"
_NAMESPACED = _BASE + "/namespaces/{namespace}/{plural}"


def object_response(obj: KubeObject, status: int = 200) -> web.Response:
    return web.Response(body=obj.to_json(), status=status, content_type="application/json")


def written_response(written: Written) -> web.Response:
    return object_response(written.obj, 201 if written.created else 200)


class Resources:
    def __init__(self, views: ObjectViews) -> None:
        self.views = views
        self.writer = Writer(views)
        self._kinds = {(info.group, info.version, info.plural): info for info in all_kinds()}

    def add_routes(self, app: web.Application) -> None:
        router = app.router
        for collection in (_BASE + "/{plural}", _NAMESPACED):
            router.add_get(collection, self.list)
            router.add_post(collection, self.create)
            item = collection + "/{name}"
            router.add_get(item, self.get)
            router.add_put(item, self.replace)
            router.add_delete(item, self.delete)

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

    async def list(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=False)
        try:
            selector = parse_label_selector(request.query.get("labelSelector", ""))
        except ValueError as err:
            raise bad_request(str(err), "labelSelector") from None
        objects = await self.views.list(info, namespace)
        body: dict[str, Any] = {
            "apiVersion": info.api_version,
            "kind": f"{info.kind}List",
            "metadata": {},
            "items": [obj.to_json_dict() for obj in objects if selector.matches(obj.metadata.labels or {})],
        }
        return web.json_response(body)

    async def get(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        name = request.match_info["name"]
        obj = await self.views.get(info, namespace, name)
        if obj is None:
            raise not_found(info, name)
        return object_response(obj)

    async def create(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        obj = parse(agree_with_path(await read_body(request), info, namespace, None))
        return written_response(await self.writer.create(info, obj, dry_run(request)))

    async def replace(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        obj = parse(agree_with_path(await read_body(request), info, namespace, request.match_info["name"]))
        return written_response(await self.writer.replace(info, obj, dry_run(request)))

    async def delete(self, request: web.Request) -> web.Response:
        info, namespace = self._kind(request, one_namespace=True)
        obj = await self.writer.delete(info, namespace, request.match_info["name"], dry_run(request))
        return object_response(obj)

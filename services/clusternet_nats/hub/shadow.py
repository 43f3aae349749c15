"""Clusternet's shadow API: ordinary Kubernetes objects written to the hub are stored as Manifests.

`/apis/shadow/v1alpha1/objects` (POST create, PUT apply) takes any object whole; its path does not
say what it touches, so each handler authorizes once the body is read, as the object's own path
for Clusternet's kinds and Clusternet's shadow path of the wrapped object otherwise.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from aiohttp import web
from clusternet_nats.api import KubeObject, by_kind
from clusternet_nats.api.labels import CONFIG_KIND, CONFIG_NAME, CONFIG_NAMESPACE
from clusternet_nats.api.loader import guess_resource
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH, collection_path, object_path
from clusternet_nats.hub.auth.gate import authorize_as, authorizes_itself
from clusternet_nats.hub.bodies import dry_run, parse, read_body
from clusternet_nats.hub.resources import written_response
from clusternet_nats.hub.writes import Writer


class Shadow:
    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(SHADOW_OBJECTS_PATH, self.create)
        app.router.add_put(SHADOW_OBJECTS_PATH, self.apply)

    @authorizes_itself
    async def create(self, request: web.Request) -> web.Response:
        body = await read_body(request)
        obj = parse(body)
        await authorize_as(request, "POST", shadow_path(body, obj, named=False))
        return written_response(await self.writer.create(by_kind(obj.kind), obj, dry_run(request)))

    @authorizes_itself
    async def apply(self, request: web.Request) -> web.Response:
        body = await read_body(request)
        obj = parse(body)
        await authorize_as(request, "PUT", shadow_path(body, obj, named=True))
        return written_response(await self.writer.replace(by_kind(obj.kind), obj, dry_run(request)))


def shadow_path(body: dict[str, Any], obj: KubeObject, named: bool) -> str:
    """The path that says what a shadow write touches, for authorization: the kind's own path for
    Clusternet's kinds, else Clusternet's shadow path of the wrapped object
    (`/apis/shadow/v1alpha1/namespaces/<ns>/<resource>[/<name>]`) as Clusternet's shadow API serves it."""
    if body.get("kind") == obj.kind:  # one of ours, not wrapped in a Manifest
        info = by_kind(obj.kind)
        namespace = obj.metadata.namespace
        return object_path(info, namespace, obj.name) if named else collection_path(info, namespace)
    meta = obj.metadata.labels or {}
    namespace = meta.get(CONFIG_NAMESPACE)
    base = SHADOW_OBJECTS_PATH.rsplit("/", 1)[0]
    scope = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
    path = f"{base}{scope}/{guess_resource(meta.get(CONFIG_KIND, ''))}"
    return f"{path}/{quote(meta.get(CONFIG_NAME, ''), safe='')}" if named else path

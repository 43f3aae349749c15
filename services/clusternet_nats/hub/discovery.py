"""Kubernetes API discovery and OpenAPI, so kubectl can talk to the hub as to any apiserver.

`/version`, `/api`, `/api/v1`, `/apis`, `/apis/<group>` and `/apis/<group>/<version>` answer what
kube-apiserver would for our kinds (from the registry: verbs, short names, categories, scope,
the `/status` subresource) plus the shadow group, whose resources are the kinds users have
applied (`shadow.shadow_resources`). kubectl first asks for the aggregated form
(`as=APIGroupDiscoveryList`) with plain JSON as its fallback; we answer plain JSON, as an
apiserver without aggregated discovery does, and 406 to a client that accepts nothing else.
`/openapi/v2` and `/openapi/v3[/apis/<group>/<version>]` serve `api.openapi`'s documents.
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import version as package_version
from typing import Any

from aiohttp import web
from clusternet_nats.api import KindInfo, all_kinds, openapi
from clusternet_nats.hub.errors import ApiError, no_such_path
from clusternet_nats.hub.shadow import SHADOW_GROUP, SHADOW_VERSION, ShadowResource, shadow_resources
from clusternet_nats.store.views import ObjectViews

KUBERNETES_VERSION = (1, 34)
"""The Kubernetes API release whose conventions the hub follows (kubectl's version-skew check reads it)."""
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]
SHADOW_VERBS = ["delete", "get", "list"]
_JSON_TYPES = ("application/json", "application/*", "*/*")


def accepts_json(request: web.Request) -> bool:
    """Whether the Accept header allows plain JSON (no header allows anything)."""
    accept = request.headers.get("Accept", "")
    if not accept.strip():
        return True
    for media in accept.split(","):
        kind, *params = (p.strip() for p in media.split(";"))
        if kind in _JSON_TYPES and not any(p.startswith("as=") for p in params):
            return True
    return False


def _json(request: web.Request, body: dict[str, Any]) -> web.Response:
    if not accepts_json(request):
        raise ApiError(406, "NotAcceptable", "only application/json is served; ask for it in Accept")
    return web.json_response(body)


def _kind_resources(info: KindInfo) -> list[dict[str, Any]]:
    main = {
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": VERBS,
        "categories": list(info.categories),
    }
    if info.short_names:
        main["shortNames"] = list(info.short_names)
    if info.status_bucket is None:
        return [main]
    status = {
        "name": f"{info.plural}/status",
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": STATUS_VERBS,
    }
    return [main, status]


def _shadow_resource(resource: ShadowResource) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": resource.plural,
        "singularName": resource.kind.lower(),
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": SHADOW_VERBS,
    }
    if resource.short_names:
        out["shortNames"] = list(resource.short_names)
    if resource.categories:
        out["categories"] = list(resource.categories)
    return out


def _group(name: str, version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


class Discovery:
    def __init__(self, views: ObjectViews) -> None:
        self.views = views
        self._groups: dict[str, str] = {info.group: info.version for info in all_kinds()}
        self._groups[SHADOW_GROUP] = SHADOW_VERSION

    def add_routes(self, app: web.Application) -> None:
        """Group and version are `g` and `v` in these paths: non-resource paths, so the gate does
        not compare them with a resource's group and version."""
        router = app.router
        router.add_get("/version", self.version)
        router.add_get("/api", self.api)
        router.add_get("/api/v1", self.api_v1)
        router.add_get("/api/v1/namespaces/{name}", self.namespace)
        router.add_get("/apis", self.apis)
        router.add_get("/apis/{g}", self.group)
        router.add_get("/apis/{g}/{v}", self.group_version)
        router.add_get("/openapi/v2", self.openapi_v2)
        router.add_get("/openapi/v3", self.openapi_v3)
        router.add_get("/openapi/v3/apis/{g}/{v}", self.openapi_v3_group_version)

    async def version(self, request: web.Request) -> web.Response:
        major, minor = KUBERNETES_VERSION
        ours = package_version("clusternet-nats")
        return web.json_response(
            {
                "major": str(major),
                "minor": str(minor),
                "gitVersion": f"v{major}.{minor}.0+clusternet-nats.{ours}",
                "gitCommit": "",
                "gitTreeState": "",
                "buildDate": "",
                "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
                "compiler": platform.python_implementation().lower(),
                "platform": f"{sys.platform}/{platform.machine()}",
            }
        )

    async def api(self, request: web.Request) -> web.Response:
        address = {"clientCIDR": "0.0.0.0/0", "serverAddress": request.host}
        return _json(request, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [address]})

    async def api_v1(self, request: web.Request) -> web.Response:
        events = {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event", "verbs": ["list"]}
        events["shortNames"] = ["ev"]
        namespaces = {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace"}
        namespaces |= {"verbs": ["get"], "shortNames": ["ns"]}
        body = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [events, namespaces]}
        return _json(request, body)

    async def namespace(self, request: web.Request) -> web.Response:
        """Every namespace exists here (objects name theirs; there is no Namespace object to create
        first). kubectl reads one after a NotFound, to say which of the two was missing."""
        name = request.match_info["name"]
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "status": {"phase": "Active"}}
        return web.json_response(body)

    async def apis(self, request: web.Request) -> web.Response:
        """The shadow group only once it has resources: kube-apiserver lists no group version without
        any, and kubectl fails on one that answers an empty list."""
        shadowed = bool(await shadow_resources(self.views))
        groups = [_group(name, version) for name, version in self._groups.items() if shadowed or name != SHADOW_GROUP]
        return _json(request, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    async def group(self, request: web.Request) -> web.Response:
        name = request.match_info["g"]
        if name not in self._groups:
            raise no_such_path()
        return _json(request, {"kind": "APIGroup", "apiVersion": "v1", **_group(name, self._groups[name])})

    async def group_version(self, request: web.Request) -> web.Response:
        group, version = request.match_info["g"], request.match_info["v"]
        if self._groups.get(group) != version:
            raise no_such_path()
        if group == SHADOW_GROUP:
            resources = [_shadow_resource(r) for r in await shadow_resources(self.views)]
        else:
            resources = [r for info in all_kinds() if info.group == group for r in _kind_resources(info)]
        body = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}"}
        return _json(request, {**body, "resources": resources})

    async def openapi_v2(self, request: web.Request) -> web.Response:
        return _json(request, openapi.v2())

    async def openapi_v3(self, request: web.Request) -> web.Response:
        return _json(request, openapi.v3_root())

    async def openapi_v3_group_version(self, request: web.Request) -> web.Response:
        gv = f"apis/{request.match_info['g']}/{request.match_info['v']}"
        try:
            document = openapi.v3_group_version(gv)
        except KeyError:
            raise no_such_path() from None
        return _json(request, document)

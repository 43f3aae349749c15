"""Kubernetes API discovery and OpenAPI, so kubectl can talk to the hub as to any apiserver.

`/version`, `/api`, `/api/v1`, `/apis`, `/apis/<group>` and `/apis/<group>/<version>` answer what
kube-apiserver would for our kinds (from the registry: verbs, short names, categories, scope,
the `/status` subresource) plus the shadow group, whose resources are the kinds users have
applied (`shadow.shadow_resources`), and Kubernetes' common built-in group versions
(`api.builtin_kinds`), which the shadow API serves at their own paths so kubectl can map
`apps/v1 Deployment` to a resource. `/api` and `/apis` answer in the aggregated form
(`as=APIGroupDiscoveryList`, apidiscovery v2) when the client asks for it first, as kubectl 1.30+
does, so kubectl learns everything in two requests; plain JSON otherwise, 406 to a client that
accepts neither.
`/openapi/v2` and `/openapi/v3[/apis/<group>/<version>]` serve `api.openapi`'s documents.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable
from importlib.metadata import version as package_version
from typing import Any

from aiohttp import web
from clusternet_nats.api import KindInfo, all_kinds, openapi
from clusternet_nats.api.builtin_kinds import BUILTIN_VERBS, BuiltinKind, builtin_group_versions
from clusternet_nats.api.proxy import PROXIES_GROUP, PROXIES_VERSION, SOCKETS_RESOURCE
from clusternet_nats.hub.errors import ApiError, no_such_path
from clusternet_nats.hub.shadow import SHADOW_GROUP, SHADOW_VERSION, ShadowResource, shadow_resources
from clusternet_nats.store.views import ObjectViews

KUBERNETES_VERSION = (1, 34)
"""The Kubernetes API release whose conventions the hub follows (kubectl's version-skew check reads it)."""
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]
SHADOW_VERBS = ["create", "delete", "get", "list", "update"]
_JSON_TYPES = ("application/json", "application/*", "*/*")


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_AGGREGATED_PARAMS = ("apidiscovery.k8s.io", "v2", "APIGroupDiscoveryList")
"""kube-apiserver's aggregated discovery: every group's resources in one answer to /api or /apis."""


def _negotiate(request: web.Request, aggregated: bool) -> str:
    """The media type to answer in, the client's first that is served here: plain JSON, or (on
    /api and /apis) aggregated discovery v2. 406 when the client accepts neither."""
    accept = request.headers.get("Accept", "")
    if not accept.strip():
        return "application/json"
    for media in accept.split(","):
        kind, *params = (p.strip().replace(" ", "") for p in media.split(";"))
        values = dict(p.partition("=")[::2] for p in params)
        if kind in _JSON_TYPES and "as" not in values:
            return "application/json"
        wanted = (values.get("g"), values.get("v"), values.get("as"))
        if aggregated and kind == "application/json" and wanted == _AGGREGATED_PARAMS:
            return AGGREGATED
    raise ApiError(406, "NotAcceptable", "only application/json is served; ask for it in Accept")


def _json(request: web.Request, body: dict[str, Any]) -> web.Response:
    _negotiate(request, aggregated=False)
    return web.json_response(body)


Served = list[tuple[str, str, list[dict[str, Any]]]]
"""Groups as (name, version, APIResourceList entries)."""


def _answer(request: web.Request, legacy: dict[str, Any], groups: Served) -> web.Response:
    """`legacy` (APIVersions or APIGroupList), or the aggregated list of `groups` (name, version,
    APIResourceList entries) if the client asked for that first."""
    if _negotiate(request, aggregated=True) == "application/json":
        return web.json_response(legacy)
    items = [
        {"metadata": {"name": name}, "versions": [_aggregated_version(name, version, resources)]}
        for name, version, resources in groups
    ]
    body = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}
    return web.Response(body=json.dumps(body).encode(), headers={"Content-Type": AGGREGATED})


def _aggregated_version(group: str, version: str, resources: list[dict[str, Any]]) -> dict[str, Any]:
    """APIResourceList entries as aggregated discovery's APIVersionDiscovery, subresources nested."""
    out: dict[str, dict[str, Any]] = {}
    for entry in resources:
        name, _, sub = entry["name"].partition("/")
        kind = {"group": group, "version": version, "kind": entry["kind"]}
        if sub:
            subresource = {"subresource": sub, "responseKind": kind, "verbs": entry["verbs"]}
            out[name].setdefault("subresources", []).append(subresource)
            continue
        out[name] = {
            "resource": name,
            "responseKind": kind,
            "scope": "Namespaced" if entry["namespaced"] else "Cluster",
            "singularResource": entry["singularName"],
            "verbs": entry["verbs"],
            **{key: entry[key] for key in ("shortNames", "categories") if key in entry},
        }
    return {"version": version, "resources": list(out.values()), "freshness": "Current"}


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


def _shadow_resource(resource: ShadowResource | BuiltinKind, verbs: list[str] = SHADOW_VERBS) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": resource.plural,
        "singularName": resource.kind.lower(),
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": verbs,
    }
    if resource.short_names:
        out["shortNames"] = list(resource.short_names)
    if resource.categories:
        out["categories"] = list(resource.categories)
    return out


CORE_RESOURCES: list[dict[str, Any]] = [
    {"name": n, "singularName": s, "namespaced": ns, "kind": k, "verbs": v, "shortNames": short}
    for n, s, ns, k, v, short in (
        ("events", "event", True, "Event", ["list"], ["ev"]),
        ("namespaces", "namespace", False, "Namespace", ["get"], ["ns"]),
    )
]
"""The core v1 resources the hub serves itself: Events, and Namespaces to read (kubectl asks after a NotFound)."""
BUILTIN: dict[str, tuple[str, list[dict[str, Any]]]] = {
    group: (version, [_shadow_resource(kind, list(BUILTIN_VERBS)) for kind in kinds])
    for (group, version), kinds in builtin_group_versions().items()
}
"""Kubernetes' built-in group versions the shadow API serves at their own paths (`api.builtin_kinds`)."""
CORE_V1 = CORE_RESOURCES + BUILTIN[""][1]
PROXIES_RESOURCES: list[dict[str, Any]] = [
    {"name": SOCKETS_RESOURCE, "singularName": "socket", "namespaced": False, "kind": "Socket", "verbs": []},
    {
        "name": f"{SOCKETS_RESOURCE}/proxy",
        "singularName": "",
        "namespaced": False,
        "kind": "Socket",
        "verbs": ["create", "delete", "get", "patch", "update"],
    },
]
"""Clusternet's `sockets/<cluster-id>/proxy` (hub/proxy): a connect subresource, as it lists it."""


def _group(name: str, version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


class Discovery:
    def __init__(self, views: ObjectViews) -> None:
        self.views = views
        self._groups: dict[str, str] = {info.group: info.version for info in all_kinds()}
        self._groups[SHADOW_GROUP] = SHADOW_VERSION
        self._groups.update((group, version) for group, (version, _) in BUILTIN.items() if group)
        self._groups[PROXIES_GROUP] = PROXIES_VERSION
        self._documents: dict[str, bytes] = {}

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
        router.add_get("/openapi/v3/api/{v}", self.openapi_v3_group_version)

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
        legacy = {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [address]}
        return _answer(request, legacy, [("", "v1", CORE_V1)])

    async def api_v1(self, request: web.Request) -> web.Response:
        return _json(request, {"kind": "APIResourceList", "groupVersion": "v1", "resources": CORE_V1})

    async def namespace(self, request: web.Request) -> web.Response:
        """Every namespace exists here (objects name theirs; there is no Namespace object to create
        first). kubectl reads one after a NotFound, to say which of the two was missing."""
        name = request.match_info["name"]
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "status": {"phase": "Active"}}
        return web.json_response(body)

    async def apis(self, request: web.Request) -> web.Response:
        """The shadow group only once it has resources: kube-apiserver lists no group version without
        any, and kubectl fails on one that answers an empty list."""
        served: Served = [(name, version, await self._resources(name)) for name, version in self._groups.items()]
        served = [(name, version, resources) for name, version, resources in served if resources]
        legacy = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(name, v) for name, v, _ in served]}
        return _answer(request, legacy, served)

    async def _resources(self, group: str) -> list[dict[str, Any]]:
        """The group's APIResourceList entries."""
        if group == SHADOW_GROUP:
            return [_shadow_resource(r) for r in await shadow_resources(self.views)]
        if group in BUILTIN:
            return BUILTIN[group][1]
        if group == PROXIES_GROUP:
            return PROXIES_RESOURCES
        return [r for info in all_kinds() if info.group == group for r in _kind_resources(info)]

    async def group(self, request: web.Request) -> web.Response:
        name = request.match_info["g"]
        if name not in self._groups:
            raise no_such_path()
        return _json(request, {"kind": "APIGroup", "apiVersion": "v1", **_group(name, self._groups[name])})

    async def group_version(self, request: web.Request) -> web.Response:
        group, version = request.match_info["g"], request.match_info["v"]
        if self._groups.get(group) != version:
            raise no_such_path()
        body = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}"}
        return _json(request, {**body, "resources": await self._resources(group)})

    def _document(self, request: web.Request, key: str, build: Callable[[], dict[str, Any]]) -> web.Response:
        """An OpenAPI document, built once: the models do not change while the hub runs, and
        building one takes tens of milliseconds."""
        _negotiate(request, aggregated=False)
        if key not in self._documents:
            self._documents[key] = json.dumps(build()).encode()
        return web.Response(body=self._documents[key], content_type="application/json")

    async def openapi_v2(self, request: web.Request) -> web.Response:
        return self._document(request, "v2", openapi.v2)

    async def openapi_v3(self, request: web.Request) -> web.Response:
        return self._document(request, "v3", openapi.v3_root)

    async def openapi_v3_group_version(self, request: web.Request) -> web.Response:
        group = request.match_info.get("g")
        gv = f"apis/{group}/{request.match_info['v']}" if group else f"api/{request.match_info['v']}"
        if gv not in openapi.group_versions():
            raise no_such_path()
        return self._document(request, gv, lambda: openapi.v3_group_version(gv))

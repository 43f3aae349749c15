"""Discovery as kube-apiserver answers it: groups, resources with verbs, short names, categories,
the /status subresource, readable by any authenticated user and by nobody else."""

from __future__ import annotations

import aiohttp
import pytest
from clusternet_nats.api import all_kinds
from clusternet_nats.api.builtin_kinds import BUILTIN_KINDS
from clusternet_nats.hub.testing import ServedHub

from tests.hub.objects import UNAUTHORIZED, subs_path

from .conftest import NOBODY, get_json

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


async def test_groups_and_versions(http: aiohttp.ClientSession) -> None:
    version = await get_json(http, "/version")
    assert (version["major"], version["minor"]) == ("1", "34")
    assert (await get_json(http, "/api"))["versions"] == ["v1"]
    groups = {g["name"]: g for g in (await get_json(http, "/apis"))["groups"]}
    assert set(groups) >= {"apps.clusternet.io", "clusters.clusternet.io"}
    assert groups["clusters.clusternet.io"]["preferredVersion"]["groupVersion"] == "clusters.clusternet.io/v1beta1"
    one = await get_json(http, "/apis/apps.clusternet.io")
    assert (one["kind"], one["versions"][0]["version"]) == ("APIGroup", "v1alpha1")
    async with http.get("/apis/no.such.group") as resp:
        assert resp.status == 404
    async with http.get("/apis/apps.clusternet.io/v9") as resp:
        assert resp.status == 404


async def test_resources_of_each_kind(http: aiohttp.ClientSession) -> None:
    for info in all_kinds():
        listed = await get_json(http, f"/apis/{info.group}/{info.version}")
        resources = {r["name"]: r for r in listed["resources"]}
        main = resources[info.plural]
        assert (main["kind"], main["singularName"], main["namespaced"]) == (info.kind, info.singular, info.namespaced)
        assert main.get("shortNames", []) == list(info.short_names)
        assert main["categories"] == ["clusternet"]
        assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(main["verbs"])
        status = resources.get(f"{info.plural}/status")
        assert (status is not None) == (info.status_bucket is not None), info.kind
        if status is not None:
            assert (status["kind"], sorted(status["verbs"])) == (info.kind, ["get", "patch", "update"])


async def test_any_authenticated_user_may_discover_but_not_read(served_hub: ServedHub, unique_ns: str) -> None:
    async with served_hub.session(NOBODY) as nobody:
        for path in ("/version", "/api", "/api/v1", "/apis", "/apis/apps.clusternet.io/v1alpha1", "/openapi/v3"):
            async with nobody.get(path) as resp:
                assert resp.status == 200, path
        async with nobody.get(subs_path(unique_ns)) as resp:
            assert resp.status == 403
        async with nobody.post("/apis") as resp:  # only reading is discovery
            assert resp.status == 403
    async with served_hub.session(user=None) as anonymous, anonymous.get("/apis") as resp:
        assert resp.status == 401
        assert await resp.json() == UNAUTHORIZED


@pytest.mark.parametrize(
    ("path", "accept", "kind"),
    [
        ("/apis", f"{AGGREGATED},application/json", "APIGroupDiscoveryList"),  # kubectl's
        ("/apis", AGGREGATED, "APIGroupDiscoveryList"),
        ("/apis", "application/json", "APIGroupList"),
        ("/apis", "*/*", "APIGroupList"),
        ("/apis", "application/yaml", "Status"),
        ("/api", f"{AGGREGATED},application/json", "APIGroupDiscoveryList"),
        ("/api", "application/json", "APIVersions"),
        ("/apis/apps.clusternet.io/v1alpha1", f"{AGGREGATED},application/json", "APIResourceList"),
        ("/apis/apps.clusternet.io/v1alpha1", AGGREGATED, "Status"),  # aggregated only at /api and /apis
    ],
)
async def test_accept_negotiation(http: aiohttp.ClientSession, path: str, accept: str, kind: str) -> None:
    async with http.get(path, headers={"Accept": accept}) as resp:
        assert resp.status == (406 if kind == "Status" else 200)
        body = await resp.json(content_type=None)
        if kind == "APIGroupDiscoveryList":
            assert resp.headers["Content-Type"] == AGGREGATED  # how client-go tells the two forms apart
    assert body["kind"] == kind


async def test_aggregated_discovery_has_what_the_resource_lists_have(http: aiohttp.ClientSession) -> None:
    async with http.get("/apis", headers={"Accept": AGGREGATED}) as resp:
        groups = {g["metadata"]["name"]: g for g in (await resp.json(content_type=None))["items"]}
    (version,) = groups["apps.clusternet.io"]["versions"]
    resources = {r["resource"]: r for r in version["resources"]}
    subs = resources["subscriptions"]
    assert subs["responseKind"] == {"group": "apps.clusternet.io", "version": "v1alpha1", "kind": "Subscription"}
    assert (subs["scope"], subs["singularResource"]) == ("Namespaced", "subscription")
    assert subs["shortNames"] == ["sub", "subs"]
    assert subs["categories"] == ["clusternet"] and "watch" in subs["verbs"]
    assert [s["subresource"] for s in subs["subresources"]] == ["status"]
    assert resources["globalizations"]["scope"] == "Cluster"
    async with http.get("/api", headers={"Accept": AGGREGATED}) as resp:
        (core,) = (await resp.json(content_type=None))["items"]
    assert core["metadata"]["name"] == ""
    core_builtins = {kind.plural for kind in BUILTIN_KINDS if not kind.group}
    assert {r["resource"] for r in core["versions"][0]["resources"]} == {"events", "namespaces"} | core_builtins
    assert "configmaps" in core_builtins
    (apps,) = groups["apps"]["versions"]
    deployments = next(r for r in apps["resources"] if r["resource"] == "deployments")
    listed = (deployments["shortNames"], deployments["categories"], deployments["scope"])
    assert listed == (["deploy"], ["all"], "Namespaced")

"""Discovery as kube-apiserver answers it: groups, resources with verbs, short names, categories,
the /status subresource, readable by any authenticated user and by nobody else."""

from __future__ import annotations

import aiohttp
import pytest
from clusternet_nats.api import all_kinds
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
    ("accept", "status"),
    [
        (f"{AGGREGATED},application/json", 200),  # kubectl's: the aggregated form, plain JSON as fallback
        ("application/json", 200),
        ("*/*", 200),
        ("", 200),
        (AGGREGATED, 406),
        ("application/yaml", 406),
    ],
)
async def test_aggregated_discovery_falls_back_to_plain(http: aiohttp.ClientSession, accept: str, status: int) -> None:
    async with http.get("/apis", headers={"Accept": accept}) as resp:
        assert resp.status == status
        body = await resp.json()
    assert body["kind"] == ("APIGroupList" if status == 200 else "Status")

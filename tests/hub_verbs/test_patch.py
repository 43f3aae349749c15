"""PATCH: merge and JSON patches, strategic merge refused as for custom resources, dry runs."""

from __future__ import annotations

from typing import Any

import aiohttp
from clusternet_nats.hub.testing import ServedHub

from .verbs import create, subs_path

MERGE = {"Content-Type": "application/merge-patch+json"}
JSON = {"Content-Type": "application/json-patch+json"}


async def _get(http: aiohttp.ClientSession, namespace: str, name: str = "demo") -> dict[str, Any]:
    async with http.get(subs_path(namespace, name)) as resp:
        body: dict[str, Any] = await resp.json()
        return body


async def test_merge_patch(http: aiohttp.ClientSession, unique_ns: str) -> None:
    created = await create(http, unique_ns)
    patch = {"metadata": {"labels": {"app": None, "tier": "web"}}, "spec": {"schedulerName": "other"}}
    async with http.patch(subs_path(unique_ns, "demo"), json=patch, headers=MERGE) as resp:
        assert resp.status == 200, await resp.text()
        body = await resp.json()
    assert body["metadata"]["labels"] == {"tier": "web"}
    assert body["spec"]["schedulerName"] == "other"
    assert body["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(body["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_json_patch_and_its_failures(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    ops = [{"op": "replace", "path": "/spec/feeds/0/name", "value": "api"}]
    async with http.patch(subs_path(unique_ns, "demo"), json=ops, headers=JSON) as resp:
        assert resp.status == 200, await resp.text()
    assert (await _get(http, unique_ns))["spec"]["feeds"][0]["name"] == "api"
    failing = [{"op": "test", "path": "/spec/feeds/0/name", "value": "web"}]
    async with http.patch(subs_path(unique_ns, "demo"), json=failing, headers=JSON) as resp:
        assert resp.status == 422
    async with http.patch(subs_path(unique_ns, "demo"), json={"op": "add"}, headers=JSON) as resp:
        assert resp.status == 400  # not a list of operations
    invalid = [{"op": "replace", "path": "/spec/feeds", "value": "not-a-list"}]
    async with http.patch(subs_path(unique_ns, "demo"), json=invalid, headers=JSON) as resp:
        assert resp.status == 422
        assert "spec.feeds" in (await resp.json())["message"]


async def test_strategic_merge_patch_is_415_as_for_custom_resources(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    await create(http, unique_ns)
    headers = {"Content-Type": "application/strategic-merge-patch+json"}
    async with http.patch(subs_path(unique_ns, "demo"), json={"spec": {}}, headers=headers) as resp:
        assert resp.status == 415
        body = await resp.json()
    assert body["reason"] == "UnsupportedMediaType"
    assert "application/merge-patch+json" in body["message"]


async def test_patch_of_a_missing_object_is_404(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.patch(subs_path(unique_ns, "nope"), json={}, headers=MERGE) as resp:
        assert resp.status == 404


async def test_a_stale_resource_version_in_the_patch_is_a_conflict(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    created = await create(http, unique_ns)
    async with http.patch(subs_path(unique_ns, "demo"), json={"metadata": {"labels": {"a": "1"}}}, headers=MERGE):
        pass
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"], "labels": {"a": "2"}}}
    async with http.patch(subs_path(unique_ns, "demo"), json=stale, headers=MERGE) as resp:
        assert resp.status == 409
        assert (await resp.json())["reason"] == "Conflict"


async def test_dry_run_patch_answers_without_writing(http: aiohttp.ClientSession, unique_ns: str) -> None:
    created = await create(http, unique_ns)
    patch = {"metadata": {"labels": {"app": "dry"}}}
    async with http.patch(subs_path(unique_ns, "demo"), json=patch, headers=MERGE, params={"dryRun": "All"}) as resp:
        assert resp.status == 200
        assert (await resp.json())["metadata"]["labels"] == {"app": "dry"}
    assert (await _get(http, unique_ns))["metadata"] == created["metadata"]
    async with http.patch(subs_path(unique_ns, "demo"), json=patch, headers=MERGE, params={"dryRun": "x"}) as resp:
        assert resp.status == 400


async def test_patch_of_the_main_resource_ignores_status(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    patch = {"status": {"desiredReleases": 7}, "metadata": {"labels": {"x": "y"}}}
    async with http.patch(subs_path(unique_ns, "demo"), json=patch, headers=MERGE) as resp:
        assert resp.status == 200
    assert "desiredReleases" not in (await _get(http, unique_ns)).get("status", {})


async def test_a_body_type_that_is_no_patch_is_415(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    async with http.patch(subs_path(unique_ns, "demo"), data=b"{}", headers={"Content-Type": "text/plain"}) as resp:
        assert resp.status == 415
        assert "text/plain" in (await resp.json())["message"]


async def test_a_viewer_may_not_patch_nor_write_status(served_hub: ServedHub, unique_ns: str) -> None:
    async with served_hub.session() as admin:
        await create(admin, unique_ns)
    async with served_hub.session("vera") as viewer:
        async with viewer.patch(subs_path(unique_ns, "demo"), json={}, headers=MERGE) as resp:
            assert resp.status == 403
            assert 'cannot patch resource "subscriptions"' in (await resp.json())["message"]
        async with viewer.put(subs_path(unique_ns, "demo") + "/status", json={}) as resp:
            assert resp.status == 403
            assert 'cannot update resource "subscriptions/status"' in (await resp.json())["message"]
        async with viewer.get(subs_path(unique_ns, "demo") + "/status") as resp:
            assert resp.status == 200

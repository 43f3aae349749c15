"""The `status` subresource: only status is written, to the kind's status bucket."""

from __future__ import annotations

import aiohttp

from .verbs import create, subs_path, subscription

MERGE = {"Content-Type": "application/merge-patch+json"}


async def test_put_and_patch_status_write_only_status(http: aiohttp.ClientSession, unique_ns: str) -> None:
    created = await create(http, unique_ns)
    body = subscription(unique_ns)
    body["metadata"]["labels"] = {"ignored": "yes"}
    body["status"] = {"desiredReleases": 2}
    async with http.put(subs_path(unique_ns, "demo") + "/status", json=body) as resp:
        assert resp.status == 200, await resp.text()
        written = await resp.json()
    assert written["status"]["desiredReleases"] == 2
    assert written["metadata"]["labels"] == created["metadata"]["labels"]
    assert written["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    patch = {"status": {"completedReleases": 1}}
    async with http.patch(subs_path(unique_ns, "demo") + "/status", json=patch, headers=MERGE) as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(subs_path(unique_ns, "demo") + "/status") as resp:
        status = (await resp.json())["status"]
    assert (status["desiredReleases"], status["completedReleases"]) == (2, 1)


async def test_status_with_a_stale_version_is_a_conflict(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    body = subscription(unique_ns)
    body["metadata"]["resourceVersion"] = "1"
    body["status"] = {"desiredReleases": 2}
    async with http.put(subs_path(unique_ns, "demo") + "/status", json=body) as resp:
        assert resp.status == 409


async def test_kinds_without_a_status_bucket_have_no_status_subresource(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    path = f"/apis/apps.clusternet.io/v1alpha1/namespaces/{unique_ns}/manifests/m/status"
    async with http.get(path) as resp:
        assert resp.status == 404


async def test_server_side_apply_of_status_is_415(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    headers = {"Content-Type": "application/apply-patch+yaml"}
    path = subs_path(unique_ns, "demo") + "/status"
    async with http.patch(path, data=b"{}", headers=headers, params={"fieldManager": "m"}) as resp:
        assert resp.status == 415
        assert "status subresource" in (await resp.json())["message"]

"""Finalizers through the hub's HTTP API, as kube-apiserver serves them: a DELETE of an object
with finalizers answers 200 with the object marked (deletionTimestamp), a GET still finds it, a
finalizer cannot be added then (422 naming the field), and the patch that drops the last one
(`finalizers: null`, the usual way to unstick an object) removes it; a PUT that names no
finalizers keeps those the controllers put."""

from __future__ import annotations

from typing import Any

import aiohttp

from ..hub.objects import subs_path, subscription

MERGE = {"Content-Type": "application/merge-patch+json"}


async def call(http: aiohttp.ClientSession, method: str, path: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    async with http.request(method, path, **kwargs) as resp:
        return resp.status, await resp.json()


async def test_delete_marks_an_object_with_finalizers_until_the_last_goes(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    body = subscription(unique_ns, "held")
    body["metadata"]["finalizers"] = ["example.com/a", "example.com/b"]
    status, created = await call(http, "POST", subs_path(unique_ns), json=body)
    assert status == 201, created

    # A PUT that names no finalizers (what `cnet apply` sends) keeps them.
    replaced = subscription(unique_ns, "held", schedulingStrategy="Replication")
    status, kept = await call(http, "PUT", subs_path(unique_ns, "held"), json=replaced)
    assert status == 200 and kept["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]

    status, marked = await call(http, "DELETE", subs_path(unique_ns, "held"))
    assert status == 200 and marked["metadata"]["deletionTimestamp"]
    status, found = await call(http, "GET", subs_path(unique_ns, "held"))
    assert status == 200 and found["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]

    add = {"metadata": {"finalizers": ["example.com/a", "example.com/b", "example.com/c"]}}
    status, refused = await call(http, "PATCH", subs_path(unique_ns, "held"), json=add, headers=MERGE)
    assert status == 422 and refused["reason"] == "Invalid", refused
    assert "metadata.finalizers: Forbidden: no new finalizers can be added" in refused["message"]

    drop = {"metadata": {"finalizers": ["example.com/b"]}}
    status, dropped = await call(http, "PATCH", subs_path(unique_ns, "held"), json=drop, headers=MERGE)
    assert status == 200 and dropped["metadata"]["finalizers"] == ["example.com/b"]
    status, last = await call(
        http, "PATCH", subs_path(unique_ns, "held"), json={"metadata": {"finalizers": None}}, headers=MERGE
    )
    assert status == 200, last
    status, _ = await call(http, "GET", subs_path(unique_ns, "held"))
    assert status == 404

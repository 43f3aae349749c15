"""Server-side apply: field managers, ownership in managedFields, conflicts and force."""

from __future__ import annotations

from typing import Any

import aiohttp
import yaml

from .verbs import subs_path, subscription

APPLY = {"Content-Type": "application/apply-patch+yaml"}


async def _apply(
    http: aiohttp.ClientSession, namespace: str, body: dict[str, Any], manager: str, **params: str
) -> aiohttp.ClientResponse:
    resp = await http.patch(
        subs_path(namespace, body["metadata"]["name"]),
        data=yaml.safe_dump(body),
        headers=APPLY,
        params={"fieldManager": manager, **params},
    )
    await resp.read()
    return resp


def _managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["manager"]: entry for entry in obj["metadata"].get("managedFields", [])}


async def test_apply_creates_then_updates_and_drops_what_it_no_longer_applies(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    body = subscription(unique_ns)
    body["metadata"]["labels"] = {"app": "demo", "tier": "web"}
    resp = await _apply(http, unique_ns, body, "alice")
    assert resp.status == 201, await resp.text()
    created = await resp.json()
    entry = _managers(created)["alice"]
    assert (entry["operation"], entry["fieldsType"]) == ("Apply", "FieldsV1")
    assert "f:tier" in entry["fieldsV1"]["f:metadata"]["f:labels"]
    assert 'k:{"name":"web"}' in entry["fieldsV1"]["f:spec"]["f:feeds"]
    del body["metadata"]["labels"]["tier"]
    resp = await _apply(http, unique_ns, body, "alice")
    assert resp.status == 200
    assert (await resp.json())["metadata"]["labels"] == {"app": "demo"}


async def test_another_manager_changing_a_field_conflicts_unless_forced(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    body = subscription(unique_ns)
    assert (await _apply(http, unique_ns, body, "alice")).status == 201
    other = subscription(unique_ns)
    other["metadata"]["labels"] = {"app": "bob-says"}
    resp = await _apply(http, unique_ns, other, "bob")
    assert resp.status == 409
    status = await resp.json()
    assert status["reason"] == "Conflict"
    assert 'conflict with "alice"' in status["message"]
    assert {c["field"] for c in status["details"]["causes"]} == {".metadata.labels.app"}
    # Applying the same value is shared ownership, not a conflict.
    assert (await _apply(http, unique_ns, subscription(unique_ns), "carol")).status == 200
    resp = await _apply(http, unique_ns, other, "bob", force="true")
    assert resp.status == 200
    obj = await resp.json()
    assert obj["metadata"]["labels"] == {"app": "bob-says"}
    managers = _managers(obj)
    assert "f:metadata" not in managers["alice"]["fieldsV1"]  # its only metadata field went to bob
    assert "f:spec" in managers["alice"]["fieldsV1"]
    assert "f:app" in managers["bob"]["fieldsV1"]["f:metadata"]["f:labels"]


async def test_apply_without_a_field_manager_is_a_400(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.patch(
        subs_path(unique_ns, "demo"), data=yaml.safe_dump(subscription(unique_ns)), headers=APPLY
    ) as resp:
        assert resp.status == 400
        assert "fieldManager" in (await resp.json())["message"]


async def test_apply_keeps_fields_other_writers_set(http: aiohttp.ClientSession, unique_ns: str) -> None:
    assert (await _apply(http, unique_ns, subscription(unique_ns), "alice")).status == 201
    merge = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(subs_path(unique_ns, "demo"), json={"spec": {"schedulerName": "x"}}, headers=merge) as r:
        assert r.status == 200
    resp = await _apply(http, unique_ns, subscription(unique_ns), "alice")
    assert (await resp.json())["spec"]["schedulerName"] == "x"


async def test_apply_dry_run_writes_nothing(http: aiohttp.ClientSession, unique_ns: str) -> None:
    resp = await _apply(http, unique_ns, subscription(unique_ns), "alice", dryRun="All")
    assert resp.status == 201
    async with http.get(subs_path(unique_ns, "demo")) as got:
        assert got.status == 404


async def test_named_list_items_are_owned_by_key(http: aiohttp.ClientSession, unique_ns: str) -> None:
    def feed(name: str) -> dict[str, str]:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": unique_ns}

    alice = subscription(unique_ns, feeds=[feed("web")])
    assert (await _apply(http, unique_ns, alice, "alice")).status == 201
    bob = subscription(unique_ns, feeds=[feed("api")])
    resp = await _apply(http, unique_ns, bob, "bob")
    assert resp.status == 200, await resp.text()  # another item of the list: no conflict
    assert [f["name"] for f in (await resp.json())["spec"]["feeds"]] == ["web", "api"]
    alice["spec"]["feeds"] = [feed("db")]
    resp = await _apply(http, unique_ns, alice, "alice")
    assert [f["name"] for f in (await resp.json())["spec"]["feeds"]] == ["api", "db"]  # web was alice's only


async def test_atomic_lists_conflict_whole(http: aiohttp.ClientSession, unique_ns: str) -> None:
    body = subscription(unique_ns)
    body["metadata"]["finalizers"] = ["a/one"]
    assert (await _apply(http, unique_ns, body, "alice")).status == 201
    body["metadata"]["finalizers"] = ["a/one", "b/two"]
    resp = await _apply(http, unique_ns, body, "bob")
    assert resp.status == 409
    assert {c["field"] for c in (await resp.json())["details"]["causes"]} == {".metadata.finalizers"}


async def test_a_put_without_managed_fields_keeps_them(http: aiohttp.ClientSession, unique_ns: str) -> None:
    assert (await _apply(http, unique_ns, subscription(unique_ns), "alice")).status == 201
    async with http.put(subs_path(unique_ns, "demo"), json=subscription(unique_ns)) as resp:
        assert resp.status == 200
        assert set(_managers(await resp.json())) == {"alice"}

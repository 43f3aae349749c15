"""Invalid requests get a Kubernetes Status naming the field, and the store is never touched."""

from __future__ import annotations

from typing import Any

import aiohttp

from .objects import APPS, subs_path, subscription


async def _absent(http: aiohttp.ClientSession, namespace: str, name: str = "demo") -> bool:
    async with http.get(subs_path(namespace, name)) as resp:
        return resp.status == 404


async def _status(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    body: dict[str, Any] = await resp.json()
    assert body["kind"] == "Status" and body["status"] == "Failure"
    return body


async def test_wrong_enum_is_invalid_with_the_field(http: aiohttp.ClientSession, unique_ns: str) -> None:
    body = subscription(unique_ns, schedulingStrategy="Sideways")
    async with http.put(subs_path(unique_ns, "demo"), json=body) as resp:
        assert resp.status == 422
        status = await _status(resp)
    assert status["reason"] == "Invalid" and status["code"] == 422
    assert status["message"].startswith('Subscription.apps.clusternet.io "demo" is invalid: spec.schedulingStrategy: ')
    assert status["details"]["name"] == "demo" and status["details"]["kind"] == "Subscription"
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.schedulingStrategy"]
    assert await _absent(http, unique_ns)


async def test_missing_required_field_is_invalid(http: aiohttp.ClientSession, unique_ns: str) -> None:
    body = subscription(unique_ns)
    del body["spec"]["feeds"]
    async with http.post(subs_path(unique_ns), json=body) as resp:
        assert resp.status == 422
        status = await _status(resp)
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.feeds"]
    assert await _absent(http, unique_ns)


async def test_body_must_agree_with_the_path(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.put(subs_path(unique_ns, "demo"), json=subscription("elsewhere")) as resp:
        assert resp.status == 400
        assert (await _status(resp))["details"]["causes"][0]["field"] == "metadata.namespace"
    async with http.put(subs_path(unique_ns, "other"), json=subscription(unique_ns)) as resp:
        assert resp.status == 400
        assert "metadata.name" in (await _status(resp))["message"]
    wrong_kind = subscription(unique_ns) | {"kind": "HelmChart"}
    async with http.post(subs_path(unique_ns), json=wrong_kind) as resp:
        assert resp.status == 400
        assert (await _status(resp))["details"]["causes"][0]["field"] == "kind"
    assert await _absent(http, unique_ns)


async def test_malformed_body_is_a_bad_request(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.post(subs_path(unique_ns), data="{not json", headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 400
        assert "not valid JSON" in (await _status(resp))["message"]


async def test_unknown_resources_are_not_found(http: aiohttp.ClientSession) -> None:
    for path in (f"{APPS}/namespaces/default/widgets", "/apis/nope/v1/things/x", "/nothing/here"):
        async with http.get(path) as resp:
            assert resp.status == 404, path
            assert (await _status(resp))["reason"] == "NotFound"

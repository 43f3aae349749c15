"""Lists with field selectors and `limit`/`continue`, as kube-apiserver serves them."""

from __future__ import annotations

import aiohttp

from .verbs import create, subs_path, subscription

APPS = "/apis/apps.clusternet.io/v1alpha1/subscriptions"


async def _names(http: aiohttp.ClientSession, path: str, **params: str) -> list[str]:
    async with http.get(path, params=params) as resp:
        assert resp.status == 200, await resp.text()
        return [item["metadata"]["name"] for item in (await resp.json())["items"]]


async def test_field_selector_by_name_and_namespace(http: aiohttp.ClientSession, unique_ns: str) -> None:
    for name in ("a", "b"):
        await create(http, unique_ns, name)
    assert await _names(http, subs_path(unique_ns), fieldSelector="metadata.name=b") == ["b"]
    assert await _names(http, subs_path(unique_ns), fieldSelector="metadata.name!=b") == ["a"]
    assert await _names(http, APPS, fieldSelector=f"metadata.namespace={unique_ns},metadata.name=a") == ["a"]


async def test_unknown_field_is_a_400_naming_it(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.get(subs_path(unique_ns), params={"fieldSelector": "spec.schedulerName=x"}) as resp:
        assert resp.status == 400
        body = await resp.json()
    assert "field label not supported: spec.schedulerName" in body["message"]
    assert body["details"]["causes"][0]["field"] == "fieldSelector"


async def test_pages_are_of_one_consistent_list(http: aiohttp.ClientSession, unique_ns: str) -> None:
    for n in range(5):
        await create(http, unique_ns, f"s{n}")
    async with http.get(subs_path(unique_ns), params={"limit": "2"}) as resp:
        first = await resp.json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["s0", "s1"]
    assert first["metadata"]["remainingItemCount"] == 3
    # Changes after the first page do not show in the later ones.
    async with http.delete(subs_path(unique_ns, "s3")) as resp:
        assert resp.status == 200
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns, "s5")) as resp:
        assert resp.status == 201
    names, token = [], first["metadata"]["continue"]
    while token:
        async with http.get(subs_path(unique_ns), params={"limit": "2", "continue": token}) as resp:
            page = await resp.json()
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["s2", "s3", "s4"]


async def test_bad_continue_and_limit(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.get(subs_path(unique_ns), params={"continue": "!!"}) as resp:
        assert resp.status == 400
        assert "continue" in (await resp.json())["message"]
    expired = "eyJzIjogIm5vbmUiLCAiaSI6IDJ9"  # a well-formed token for a list the hub does not hold
    async with http.get(subs_path(unique_ns), params={"continue": expired}) as resp:
        assert resp.status == 410
        assert (await resp.json())["reason"] == "Expired"
    async with http.get(subs_path(unique_ns), params={"limit": "x"}) as resp:
        assert resp.status == 400


async def test_a_continue_token_serves_only_the_list_it_came_from(http: aiohttp.ClientSession, unique_ns: str) -> None:
    for n in range(3):
        await create(http, unique_ns, f"s{n}")
    async with http.get(subs_path(unique_ns), params={"limit": "1"}) as resp:
        token = (await resp.json())["metadata"]["continue"]
    for path, params in ((subs_path("elsewhere"), {}), (subs_path(unique_ns), {"labelSelector": "app=s1"})):
        async with http.get(path, params={"limit": "1", "continue": token, **params}) as resp:
            assert resp.status == 410

"""A PUT without a resourceVersion is kube-apiserver's unconditional update: never a 409."""

from __future__ import annotations

import asyncio

import aiohttp

from .verbs import create, subs_path, subscription


async def test_concurrent_unconditional_puts_all_succeed(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)

    async def put(n: int) -> int:
        body = subscription(unique_ns)
        body["metadata"]["labels"] = {"writer": str(n)}
        async with http.put(subs_path(unique_ns, "demo"), json=body) as resp:
            return resp.status

    statuses = await asyncio.gather(*(put(n) for n in range(24)))
    assert statuses == [200] * 24
    async with http.get(subs_path(unique_ns, "demo")) as resp:
        labels = (await resp.json())["metadata"]["labels"]
    assert labels["writer"] in {str(n) for n in range(24)}


async def test_concurrent_merge_patches_all_land(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    headers = {"Content-Type": "application/merge-patch+json"}

    async def patch(n: int) -> int:
        body = {"metadata": {"annotations": {f"w{n}": "x"}}}
        async with http.patch(subs_path(unique_ns, "demo"), json=body, headers=headers) as resp:
            return resp.status

    assert await asyncio.gather(*(patch(n) for n in range(12))) == [200] * 12
    async with http.get(subs_path(unique_ns, "demo")) as resp:
        annotations = (await resp.json())["metadata"]["annotations"]
    assert set(annotations) == {f"w{n}" for n in range(12)}

"""A PUT without a resourceVersion, and a DELETE without preconditions, are kube-apiserver's
unconditional writes: never a 409 because someone else wrote meanwhile."""

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


async def test_delete_while_a_controller_writes_is_never_a_409(http: aiohttp.ClientSession, unique_ns: str) -> None:
    """kube-apiserver re-reads and retries a DELETE without preconditions that lost a race with a
    write (a scheduler's or deployer's), as `kubectl delete -f` expects; five rounds, each against
    writers patching the object until it is gone."""
    headers = {"Content-Type": "application/merge-patch+json"}

    async def write_until_gone(n: int) -> int:
        writes = 0
        while True:
            body = {"metadata": {"annotations": {f"w{n}": str(writes)}}}
            async with http.patch(subs_path(unique_ns, "demo"), json=body, headers=headers) as resp:
                if resp.status == 404:
                    return writes
                assert resp.status == 200, await resp.text()
            writes += 1

    for _ in range(5):
        await create(http, unique_ns)
        writers = [asyncio.create_task(write_until_gone(n)) for n in range(4)]
        try:
            async with http.patch(subs_path(unique_ns, "demo"), json={}, headers=headers) as resp:
                assert resp.status == 200  # the writers are under way
            async with http.delete(subs_path(unique_ns, "demo")) as resp:
                assert resp.status == 200, await resp.text()
            assert sum(await asyncio.gather(*writers)) > 0
        finally:
            for writer in writers:
                writer.cancel()

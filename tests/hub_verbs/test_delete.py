"""DELETE with DeleteOptions: propagation policies, preconditions, dry run."""

from __future__ import annotations

import aiohttp
import pytest

from .verbs import create, subs_path


async def _exists(http: aiohttp.ClientSession, namespace: str, name: str = "demo") -> bool:
    async with http.get(subs_path(namespace, name)) as resp:
        return resp.status == 200


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
async def test_every_propagation_policy_is_accepted(http: aiohttp.ClientSession, unique_ns: str, policy: str) -> None:
    await create(http, unique_ns)
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy}
    async with http.delete(subs_path(unique_ns, "demo"), json=options) as resp:
        assert resp.status == 200
    assert not await _exists(http, unique_ns)


async def test_unknown_policy_is_a_400(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    async with http.delete(subs_path(unique_ns, "demo"), params={"propagationPolicy": "Later"}) as resp:
        assert resp.status == 400
        assert "propagationPolicy" in (await resp.json())["message"]
    async with http.delete(subs_path(unique_ns, "demo"), data=b"{not json") as resp:
        assert resp.status == 400
    assert await _exists(http, unique_ns)


async def test_preconditions_that_do_not_hold_are_409(http: aiohttp.ClientSession, unique_ns: str) -> None:
    created = await create(http, unique_ns)
    for preconditions in ({"uid": "another"}, {"resourceVersion": "1"}):
        async with http.delete(subs_path(unique_ns, "demo"), json={"preconditions": preconditions}) as resp:
            assert resp.status == 409
            assert "Precondition failed" in (await resp.json())["message"]
    assert await _exists(http, unique_ns)
    meta = created["metadata"]
    holding = {"preconditions": {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}}
    async with http.delete(subs_path(unique_ns, "demo"), json=holding) as resp:
        assert resp.status == 200
    assert not await _exists(http, unique_ns)


async def test_dry_run_delete_keeps_the_object(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns)
    async with http.delete(subs_path(unique_ns, "demo"), params={"dryRun": "All"}) as resp:
        assert resp.status == 200
    async with http.delete(subs_path(unique_ns, "demo"), json={"dryRun": ["All"]}) as resp:
        assert resp.status == 200
    assert await _exists(http, unique_ns)

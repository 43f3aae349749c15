"""DELETE with DeleteOptions: propagation policies, preconditions, dry run."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from clusternet_nats.api import by_kind
from clusternet_nats.api.apps import Base
from clusternet_nats.api.labels import CREATED_BY, DEPLOYER, SUBS_UID
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

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


def _base(namespace: str, owner: dict[str, Any]) -> Base:
    uid = owner["metadata"]["uid"]
    return Base.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Base",
            "metadata": {
                "name": f"{namespace}-demo",
                "namespace": namespace,
                "labels": {SUBS_UID: uid, CREATED_BY: DEPLOYER},
                "ownerReferences": [
                    {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Subscription", "name": "demo", "uid": uid}
                ],
            },
            "spec": {"feeds": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": namespace}]},
        }
    )


async def test_orphan_detaches_the_bases_so_the_deployer_keeps_them(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    created = await create(http, unique_ns)
    bases: ObjectStore[Base] = ObjectStore(js, by_kind("Base"))
    base = await bases.create(_base(unique_ns, created))
    async with http.delete(subs_path(unique_ns, "demo"), json={"propagationPolicy": "Orphan"}) as resp:
        assert resp.status == 200
    kept = await bases.require(unique_ns, base.name)
    assert SUBS_UID not in (kept.metadata.labels or {})
    assert not kept.metadata.owner_references
    assert (kept.metadata.labels or {})[CREATED_BY] == DEPLOYER


async def test_foreground_answers_once_the_dependents_are_gone(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    created = await create(http, unique_ns)
    bases: ObjectStore[Base] = ObjectStore(js, by_kind("Base"))
    base = await bases.create(_base(unique_ns, created))
    options = {"propagationPolicy": "Foreground"}
    deleting = asyncio.create_task(http.delete(subs_path(unique_ns, "demo"), json=options))
    await eventually(lambda: _gone(http, unique_ns), what="the Subscription deleted")
    assert not deleting.done()  # its Base is still there
    await bases.delete(unique_ns, base.name)  # what the deployer's sweep does
    resp = await asyncio.wait_for(deleting, 30)
    assert resp.status == 200
    resp.release()


async def _gone(http: aiohttp.ClientSession, namespace: str) -> bool:
    return not await _exists(http, namespace)

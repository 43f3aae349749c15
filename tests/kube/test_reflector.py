"""The reflector against a real kube-apiserver: resumes a watch from its resourceVersion, lists
again only on 410 Gone, and reports what changed while it was not watching."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import KubeApi, connect
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.tools import Tools
from clusternet_nats.testing.waiting import eventually


def _key(obj: dict[str, object]) -> str:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return str(meta["name"])


@pytest.fixture(scope="module")
async def uncached(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ControlPlane]:
    """An apiserver without a watch cache, so that a compacted resourceVersion really is gone."""
    plane = ControlPlane("uncached", kube_tools, tmp_path_factory.mktemp("uncached"), ("--watch-cache=false",))
    await plane.start_async()
    yield plane
    await plane.stop_async()


@pytest.fixture
async def api(uncached: ControlPlane) -> AsyncIterator[KubeApi]:
    client = await connect(uncached.kubeconfig)
    yield client
    await client.close()


async def compact_etcd(plane: ControlPlane, revision: int) -> None:
    """What the apiserver does every 5 minutes, now (etcd's JSON gateway)."""
    url = f"http://127.0.0.1:{plane.etcd_port}/v3/kv/compaction"
    async with aiohttp.ClientSession() as session, session.post(url, json={"revision": revision}) as resp:
        assert resp.status == 200, await resp.text()


@contextlib.asynccontextmanager
async def running(reflector: Reflector) -> AsyncIterator[None]:
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.wait_synced(), 30)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_resumes_from_resource_version_and_relists_on_gone(
    uncached: ControlPlane, api: KubeApi, unique_ns: str
) -> None:
    kubectl = uncached.kubectl_async
    assert (await kubectl("create", "namespace", unique_ns)).returncode == 0
    assert (await kubectl("-n", unique_ns, "create", "configmap", "first")).returncode == 0
    reflector = Reflector(api, f"/api/v1/namespaces/{unique_ns}/configmaps", _key)
    changed: list[str] = []
    reflector.add_handler(changed.append)

    async with running(reflector):
        assert reflector.lists == 1
        listed = reflector.get("first")
        assert listed is not None and (listed["apiVersion"], listed["kind"]) == ("v1", "ConfigMap")
        assert (await kubectl("-n", unique_ns, "create", "configmap", "second")).returncode == 0
        await eventually(lambda: reflector.get("second"), timeout=10, what="watched create")

    # Stopped: a change meanwhile is caught up by resuming the watch, not by listing again.
    assert (await kubectl("-n", unique_ns, "create", "configmap", "third")).returncode == 0
    async with running(reflector):
        await eventually(lambda: reflector.get("third"), timeout=10, what="resumed watch")
        assert reflector.lists == 1

    # A version the apiserver no longer has (etcd compacted it): 410 Gone, list again, and the
    # deletion that happened meanwhile is reported.
    assert (await kubectl("-n", unique_ns, "delete", "configmap", "first")).returncode == 0
    assert (await kubectl("-n", unique_ns, "create", "configmap", "fourth")).returncode == 0
    now = await api.request("GET", f"/api/v1/namespaces/{unique_ns}/configmaps")
    await compact_etcd(uncached, int(now["metadata"]["resourceVersion"]))
    changed.clear()
    async with running(reflector):
        await eventually(lambda: reflector.lists == 2, timeout=10, what="relisted after 410")
        await eventually(lambda: reflector.get("first") is None, timeout=10, what="deletion seen")
        assert "first" in changed
        assert {"second", "third", "fourth"} <= set(reflector.keys())

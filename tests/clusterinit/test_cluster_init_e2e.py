"""ClusterInit end to end: NATS, hub (ClusterInit=true), scheduler, deployer and simulated agents
as processes, driven with `cnet apply` and the hub's API as a user would.

A cluster joining gets the initialization taint and the init Subscription's Base (the one
annotated `apps.clusternet.io/is-default-cluster-init`, tolerating the taint) recorded as its
`spec.clusterInitBaseName`; while that Base's Descriptions are not Success the ClusterInit
condition says why and no other Subscription reaches the cluster; once they are, the condition is
ClusterInitDone, the taint goes, and the other Subscription follows. A cluster with no init Base
waits tainted (as Clusternet's), until it is annotated to skip initialization.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually, holds

from tests.e2e.conftest import APPS, CLUSTERS, HubClient, child_objects, cnet, owned_by

TAINT = "clusters.clusternet.io/initialization"
INIT_OBJECTS = {("Namespace", "", "bootstrap"), ("ConfigMap", "bootstrap", "settings")}
APP_OBJECTS = {("Namespace", "", "app-ns")}


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("clusterinit"), sim_clusters=0)
    sut.services["hub"].env["CNET_HUB_FEATURE_GATES"] = "ClusterInit=true"
    sut.add_agent("agent-fresh", "fresh", 1, "env=fresh")
    sut.add_agent("agent-orphan", "orphan", 1, "env=orphan")
    sut.nats.start()
    for name, service in sut.services.items():
        if name not in sut.agents():
            service.start()
    sut.wait_ready(90, tuple(n for n in sut.services if n not in sut.agents()))
    yield sut
    codes = sut.stop()
    assert all(code == 0 for code in codes.values() if code is not None), codes


@pytest.fixture
async def hub(system: System) -> AsyncIterator[HubClient]:
    connector = aiohttp.TCPConnector(ssl=system.hub_ssl_context())
    async with aiohttp.ClientSession(headers=system.hub_headers(), connector=connector) as session:
        yield HubClient(session, system.hub_url)


def manifest(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(objects)


NAMESPACE_BOOTSTRAP = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bootstrap"}}
CONFIGMAP_SETTINGS = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "bootstrap"},
    "data": {"registry": "mirror.example.com"},
}
INIT_SUBSCRIPTION = {
    "apiVersion": "apps.clusternet.io/v1alpha1",
    "kind": "Subscription",
    "metadata": {
        "name": "cluster-init",
        "namespace": "default",
        "annotations": {"apps.clusternet.io/is-default-cluster-init": "true"},
    },
    "spec": {
        "subscribers": [{"clusterAffinity": {"matchLabels": {"env": "fresh"}}}],
        "clusterTolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        "feeds": [
            {"apiVersion": "v1", "kind": "Namespace", "name": "bootstrap"},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": "bootstrap"},
        ],
    },
}
APP = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app-ns"}},
    {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {
            "subscribers": [{"clusterAffinity": {}}],
            "feeds": [{"apiVersion": "v1", "kind": "Namespace", "name": "app-ns"}],
        },
    },
]


def apply(system: System, path: Path, text: str) -> None:
    path.write_text(text)
    result = cnet(system, "apply", "-f", str(path))
    assert result.returncode == 0, result.stderr + result.stdout


async def cluster_labelled(hub: HubClient, env: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        mcls = await hub.items(f"{CLUSTERS}/managedclusters")
        return next((m for m in mcls if m["metadata"]["labels"].get("env") == env), None)

    cluster = await eventually(found, 60, what=f"the {env} cluster registered")
    assert isinstance(cluster, dict)
    return cluster


async def read(hub: HubClient, cluster: dict[str, Any]) -> dict[str, Any]:
    meta = cluster["metadata"]
    found = await hub.get(f"{CLUSTERS}/namespaces/{meta['namespace']}/managedclusters/{meta['name']}")
    assert found is not None
    return dict(found)


def init_condition(cluster: dict[str, Any]) -> tuple[str, str, str] | None:
    for cond in (cluster.get("status") or {}).get("conditions") or []:
        if cond["type"] == "ClusterInit":
            return cond["status"], cond["reason"], cond["message"]
    return None


def init_taints(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in cluster["spec"].get("taints") or [] if t["key"] == TAINT]


async def waiting(hub: HubClient, cluster: dict[str, Any], message: str) -> dict[str, Any]:
    """The cluster once tainted, its ClusterInit condition False (ClusterInitWaiting) with `message`."""

    async def tainted() -> dict[str, Any] | None:
        current = await read(hub, cluster)
        wanted = ("False", "ClusterInitWaiting", message)
        return current if init_condition(current) == wanted and init_taints(current) else None

    current = await eventually(tainted, 60, what=f"ClusterInit waiting: {message}")
    assert isinstance(current, dict)
    return current


async def app_descriptions_in(hub: HubClient, namespace: str) -> list[dict[str, Any]]:
    descs = owned_by(await hub.items(f"{APPS}/descriptions"), "app")
    return [d for d in descs if d["metadata"]["namespace"] == namespace]


async def test_a_new_cluster_is_initialised_before_anything_else_is_scheduled(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    # The init Subscription's ConfigMap is not there yet: its Base waits, so does the cluster.
    apply(system, tmp_path / "ns.yaml", manifest(NAMESPACE_BOOTSTRAP, INIT_SUBSCRIPTION))
    system.services["agent-fresh"].start()
    await system.wait_ready_async(60, ("agent-fresh",))
    fresh = await cluster_labelled(hub, "fresh")
    namespace, name = fresh["metadata"]["namespace"], fresh["metadata"]["name"]

    current = await waiting(hub, fresh, "no matching Descriptions are found. will retry")
    assert init_taints(current) == [{"key": TAINT, "value": "ClusterInitWaiting", "effect": "NoSchedule"}]
    bases = owned_by(await hub.items(f"{APPS}/namespaces/{namespace}/bases"), "cluster-init")
    assert [b["metadata"]["name"] for b in bases] == [current["spec"]["clusterInitBaseName"]]

    # Another Subscription now: the taint keeps it away from the cluster being initialised.
    apply(system, tmp_path / "app.yaml", manifest(*APP))

    async def kept_away() -> bool:
        sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/app")
        bound = ((sub or {}).get("status") or {}).get("bindingClusters") or []
        return f"{namespace}/{name}" not in bound and not await app_descriptions_in(hub, namespace)

    await holds(kept_away, 4, what="nothing but the init Subscription scheduled on a tainted cluster")
    assert not APP_OBJECTS & child_objects(system, name)

    # The missing feed arrives: the init Base's objects land, then the taint goes, then the app.
    apply(system, tmp_path / "cm.yaml", manifest(CONFIGMAP_SETTINGS))

    async def initialised() -> dict[str, Any] | None:
        current = await read(hub, fresh)
        done = ("True", "ClusterInitDone", "cluster has been initialized successfully")
        return current if init_condition(current) == done and not init_taints(current) else None

    await eventually(initialised, 60, what="ClusterInit done and the taint lifted")
    # (the simulated cluster's state file is written a moment after the objects are applied)
    await eventually(lambda: child_objects(system, name) >= INIT_OBJECTS, 10, what="init objects in the cluster")

    async def app_running() -> bool:
        descs = await app_descriptions_in(hub, namespace)
        return bool(descs) and all((d.get("status") or {}).get("phase") == "Success" for d in descs)

    await eventually(app_running, 60, what="the app Subscription deployed once the taint is gone")
    await eventually(lambda: child_objects(system, name) >= APP_OBJECTS, 30, what="app objects in the cluster")
    events = await hub.items(f"/api/v1/namespaces/{namespace}/events")
    reasons = {e["reason"] for e in events if e["involvedObject"]["name"] == name}
    assert {"ClusterInitWaiting", "ClusterInitDone"} <= reasons


async def test_a_cluster_without_an_init_base_waits_tainted_until_it_skips_initialization(
    system: System, hub: HubClient
) -> None:
    system.services["agent-orphan"].start()
    await system.wait_ready_async(60, ("agent-orphan",))
    orphan = await cluster_labelled(hub, "orphan")
    meta = orphan["metadata"]

    current = await waiting(hub, orphan, "still waiting for cluster getting initialized")
    assert current["spec"].get("clusterInitBaseName") is None

    async def no_app() -> bool:
        return not await app_descriptions_in(hub, meta["namespace"])

    await holds(no_app, 3, what="the app Subscription kept off a cluster never initialised")

    patch = {"metadata": {"annotations": {"clusters.clusternet.io/skip-cluster-init": "true"}}}
    path = f"{CLUSTERS}/namespaces/{meta['namespace']}/managedclusters/{meta['name']}"
    headers = {"Content-Type": "application/merge-patch+json"}
    async with hub.session.patch(hub.url + path, json=patch, headers=headers) as resp:
        assert resp.status == 200, await resp.text()

    async def skipped() -> bool:
        current = await read(hub, orphan)
        done = ("True", "ClusterInitDisabled", "cluster initialization is skipped")
        return init_condition(current) == done and not init_taints(current)

    await eventually(skipped, 30, what="initialization skipped and the taint lifted")
    await eventually(lambda: child_objects(system, meta["name"]) >= APP_OBJECTS, 60, what="app on the skipped cluster")

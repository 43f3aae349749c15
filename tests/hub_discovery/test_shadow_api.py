"""Clusternet's shadow API read side: the kinds users applied become resources of shadow/v1alpha1,
their objects readable as applied, authorized as Clusternet's shadow paths."""

from __future__ import annotations

from typing import Any

import aiohttp
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer

from tests.hub.objects import APPS, deployment

from .conftest import NOBODY

SHADOW = "/apis/shadow/v1alpha1"


def _config_map(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf", "namespace": namespace}}


def _class() -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "x"}


async def _groups(http: aiohttp.ClientSession) -> list[str]:
    async with http.get("/apis") as resp:
        return [g["name"] for g in (await resp.json())["groups"]]


async def test_shadow_group_lists_the_applied_kinds(private_nats: NatsServer) -> None:
    async with running_hub(private_nats.url) as hub, hub.session() as http:
        assert "shadow" not in await _groups(http)  # no group version without resources, as kube
        for body in (deployment("team-a"), deployment("team-b", "api"), _config_map("team-a"), _class()):
            async with http.put(SHADOW_OBJECTS_PATH, json=body) as resp:
                assert resp.status == 201, await resp.text()
        assert "shadow" in await _groups(http)
        async with http.get(SHADOW) as resp:
            resources = {r["name"]: r for r in (await resp.json())["resources"]}
    assert sorted(resources) == ["configmaps", "deployments", "storageclasses"]
    deploy = resources["deployments"]
    assert (deploy["kind"], deploy["namespaced"], deploy["shortNames"], deploy["categories"]) == (
        "Deployment",
        True,
        ["deploy"],
        ["all"],
    )
    assert "categories" not in resources["configmaps"] and resources["configmaps"]["shortNames"] == ["cm"]
    assert resources["storageclasses"]["namespaced"] is False


async def test_objects_read_back_as_applied(http: aiohttp.ClientSession, unique_ns: str) -> None:
    for name in ("web", "api"):
        async with http.put(SHADOW_OBJECTS_PATH, json=deployment(unique_ns, name)) as resp:
            assert resp.status == 201
    async with http.get(f"{SHADOW}/namespaces/{unique_ns}/deployments") as resp:
        listed = await resp.json()
    assert sorted(item["metadata"]["name"] for item in listed["items"]) == ["api", "web"]
    async with http.get(f"{SHADOW}/namespaces/{unique_ns}/deployments/web") as resp:
        web = await resp.json()
    assert (web["kind"], web["spec"]["replicas"], web["metadata"]["namespace"]) == ("Deployment", 2, unique_ns)
    assert web["metadata"]["uid"] and web["metadata"]["creationTimestamp"]
    async with http.get(f"{SHADOW}/deployments") as resp:  # across namespaces
        everywhere = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in (await resp.json())["items"]}
    assert {(unique_ns, "web"), (unique_ns, "api")} <= everywhere
    for path in (f"{SHADOW}/namespaces/{unique_ns}/deployments/nope", f"{SHADOW}/namespaces/{unique_ns}/widgets"):
        async with http.get(path) as resp:
            assert resp.status == 404
            assert (await resp.json())["kind"] == "Status"


async def test_selectors_and_delete(http: aiohttp.ClientSession, unique_ns: str) -> None:
    for name in ("web", "api"):
        body = deployment(unique_ns, name)
        body["metadata"]["labels"] = {"tier": name}
        async with http.put(SHADOW_OBJECTS_PATH, json=body) as resp:
            assert resp.status == 201
    collection = f"{SHADOW}/namespaces/{unique_ns}/deployments"
    for query, names in (
        ({"labelSelector": "tier=web"}, ["web"]),
        ({"labelSelector": "tier!=web"}, ["api"]),
        ({"fieldSelector": "metadata.name=api"}, ["api"]),
        ({"fieldSelector": "metadata.name=none"}, []),
    ):
        async with http.get(collection, params=query) as resp:
            assert [i["metadata"]["name"] for i in (await resp.json())["items"]] == names, query
    async with http.get(collection, params={"fieldSelector": "spec.replicas=2"}) as resp:
        assert resp.status == 400
    async with http.delete(f"{collection}/web") as resp:
        assert resp.status == 200
        assert (await resp.json())["metadata"]["name"] == "web"
    async with http.get(f"{APPS}/namespaces/clusternet-reserved/manifests/deployments.{unique_ns}.web") as resp:
        assert resp.status == 404  # the Manifest went with it
    async with http.delete(f"{collection}/web") as resp:
        assert resp.status == 404
    async with http.get(collection) as resp:
        assert [i["metadata"]["name"] for i in (await resp.json())["items"]] == ["api"]


async def test_writes_at_clusternets_paths(served_hub: ServedHub, http: aiohttp.ClientSession, unique_ns: str) -> None:
    collection = f"{SHADOW}/namespaces/{unique_ns}/deployments"
    body = deployment(unique_ns)
    del body["metadata"]["namespace"]  # the path says it
    async with http.post(collection, json=body) as resp:
        assert resp.status == 201, await resp.text()
        created = await resp.json()
    assert (created["kind"], created["metadata"]["namespace"]) == ("Deployment", unique_ns)
    async with http.get(f"{APPS}/namespaces/clusternet-reserved/manifests/deployments.{unique_ns}.web") as resp:
        assert resp.status == 200  # stored as Clusternet stores it
    async with http.post(collection, json=body) as resp:
        assert resp.status == 409
    body["spec"]["replicas"] = 5
    async with http.put(f"{collection}/web", json=body) as resp:
        assert resp.status == 200
    async with http.get(f"{collection}/web") as resp:
        assert (await resp.json())["spec"]["replicas"] == 5
    for path, wrong, field in (
        (f"{collection}/other", body, "metadata.name"),
        (f"{SHADOW}/namespaces/elsewhere/deployments/web", deployment(unique_ns), "metadata.namespace"),
        (f"{SHADOW}/namespaces/{unique_ns}/configmaps/web", deployment(unique_ns), "kind"),
    ):
        async with http.put(path, json=wrong) as resp:
            assert resp.status == 400, path
            assert (await resp.json())["details"]["causes"][0]["field"] == field
    async with served_hub.session(NOBODY) as nobody, nobody.post(collection, json=body) as resp:
        assert resp.status == 403
    cluster = {  # Clusternet's kinds only at their own paths, where creating this one is admin-only
        "apiVersion": "clusters.clusternet.io/v1beta1",
        "kind": "ManagedCluster",
        "metadata": {"name": "sneaky"},
        "spec": {"clusterId": "9f6a4b0e-0000-4000-8000-000000000001", "syncMode": "Pull"},
    }
    manifest = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Manifest", "metadata": {"name": "m"}}
    manifest["template"] = body
    for kind, plural, sent in (("ManagedCluster", "managedclusters", cluster), ("Manifest", "manifests", manifest)):
        async with http.post(f"{SHADOW}/namespaces/{unique_ns}/{plural}", json=sent) as resp:
            assert resp.status == 400, kind
            assert (await resp.json())["details"]["causes"][0]["field"] == "kind"
    async with http.get(f"/apis/clusters.clusternet.io/v1beta1/namespaces/{unique_ns}/managedclusters") as resp:
        assert (await resp.json())["items"] == []


async def test_reads_are_authorized_as_shadow_paths(served_hub: ServedHub, http: aiohttp.ClientSession) -> None:
    async with http.put(SHADOW_OBJECTS_PATH, json=deployment("kept")) as resp:
        assert resp.status in (200, 201)
    async with served_hub.session(NOBODY) as nobody, nobody.get(f"{SHADOW}/namespaces/kept/deployments") as resp:
        assert resp.status == 403
        status = await resp.json()
    assert status["message"] == (
        'deployments.shadow is forbidden: User "nora-nobody" cannot list resource "deployments" '
        'in API group "shadow" in the namespace "kept"'
    )

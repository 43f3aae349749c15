"""Ordinary Kubernetes objects are stored as Manifests, named and labelled as Clusternet does."""

from __future__ import annotations

import aiohttp
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH

from .objects import APPS, deployment


async def test_deployment_becomes_a_manifest(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.put(SHADOW_OBJECTS_PATH, json=deployment(unique_ns)) as resp:
        assert resp.status == 201
        manifest = await resp.json()
    name = f"deployments.{unique_ns}.web"
    assert manifest["kind"] == "Manifest"
    assert manifest["metadata"]["namespace"] == "clusternet-reserved"
    assert manifest["metadata"]["name"] == name
    assert manifest["metadata"]["labels"]["apps.clusternet.io/config.kind"] == "Deployment"
    assert manifest["template"]["spec"]["replicas"] == 2

    path = f"{APPS}/namespaces/clusternet-reserved/manifests/{name}"
    async with http.get(path) as resp:
        assert (await resp.json())["template"]["metadata"]["namespace"] == unique_ns

    async with http.put(SHADOW_OBJECTS_PATH, json=deployment(unique_ns)) as resp:
        assert resp.status == 200
    async with http.post(SHADOW_OBJECTS_PATH, json=deployment(unique_ns)) as resp:
        assert resp.status == 409
    async with http.delete(path) as resp:
        assert resp.status == 200
    async with http.get(path) as resp:
        assert resp.status == 404


async def test_invalid_object_names_its_field(http: aiohttp.ClientSession, unique_ns: str) -> None:
    body = deployment(unique_ns)
    del body["metadata"]["name"]
    async with http.post(SHADOW_OBJECTS_PATH, json=body) as resp:
        assert resp.status == 422
        status = await resp.json()
    assert status["details"]["causes"][0]["field"] == "metadata.name"
    assert status["details"]["kind"] == "Deployment"

"""OpenAPI v2 and v3 from the models, with the CRDs' descriptions and kubectl's GVK tags."""

from __future__ import annotations

import aiohttp
from clusternet_nats.api import all_kinds, by_kind
from clusternet_nats.api.builtin_kinds import BUILTIN_KINDS
from clusternet_nats.api.crds import openapi_schema
from clusternet_nats.api.openapi import definition_name

from .conftest import get_json


async def test_v3_documents_of_every_group_version(http: aiohttp.ClientSession) -> None:
    root = await get_json(http, "/openapi/v3")
    seen = set()
    builtins = {kind.kind: kind for kind in BUILTIN_KINDS}
    for gv, entry in root["paths"].items():
        document = await get_json(http, entry["serverRelativeURL"])
        for name, schema in document["components"]["schemas"].items():
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                assert (f"apis/{gvk['group']}/" if gvk["group"] else "api/") + gvk["version"] == gv
                seen.add(gvk["kind"])
                assert name == definition_name(builtins.get(gvk["kind"]) or by_kind(gvk["kind"]))
    assert seen == {info.kind for info in all_kinds()} | set(builtins)
    deployments = await get_json(http, "/openapi/v3/apis/apps/v1")
    patch = deployments["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    async with http.get("/openapi/v3/apis/no.such.group/v1") as resp:
        assert resp.status == 404


async def test_schemas_are_the_crds_with_descriptions(http: aiohttp.ClientSession) -> None:
    info = by_kind("Subscription")
    document = await get_json(http, f"/openapi/v3/apis/{info.group}/{info.version}")
    schema = document["components"]["schemas"][definition_name(info)]
    crd = openapi_schema(info)
    assert schema["properties"]["spec"] == crd["properties"]["spec"]
    feeds = schema["properties"]["spec"]["properties"]["feeds"]
    assert feeds["description"] == "Feeds"
    assert feeds["items"]["properties"]["name"]["description"] == "Name of the target resource."
    meta_ref = schema["properties"]["metadata"]["allOf"][0]["$ref"].rsplit("/", 1)[-1]
    labels = document["components"]["schemas"][meta_ref]["properties"]["labels"]
    assert labels["additionalProperties"]["type"] == "string"


async def test_v2_has_every_kind_with_definitions_refs(http: aiohttp.ClientSession) -> None:
    swagger = await get_json(http, "/openapi/v2")
    assert swagger["swagger"] == "2.0"
    for info in all_kinds():
        definition = swagger["definitions"][definition_name(info)]
        assert definition["x-kubernetes-group-version-kind"] == [
            {"group": info.group, "kind": info.kind, "version": info.version}
        ]
        assert definition["properties"]["metadata"]["allOf"][0]["$ref"].startswith("#/definitions/")
    protobuf = {"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
    async with http.get("/openapi/v2", headers=protobuf) as resp:
        assert resp.status == 406

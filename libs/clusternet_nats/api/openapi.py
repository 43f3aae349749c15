"""OpenAPI v2 and v3 documents of the served kinds, generated from the pydantic models.

The schemas are the generated CRDs' (`crds.openapi_schema`, so `kubectl explain` reads the same
descriptions from the hub as from a parent cluster holding the CRDs), named and tagged as
kube-apiserver names a CRD's (`io.clusternet.apps.v1alpha1.Subscription` with
`x-kubernetes-group-version-kind`), which is how kubectl finds a kind's schema. `metadata` is
described by our ObjectMeta model rather than left free-form, so `explain <kind>.metadata` works.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from clusternet_nats.api.builtin_kinds import BUILTIN_KINDS, BuiltinKind
from clusternet_nats.api.crds import Schema, openapi_schema, structural
from clusternet_nats.api.meta import ObjectMeta
from clusternet_nats.api.registry import KindInfo, all_kinds

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_METADATA_DESCRIPTION = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def definition_name(info: KindInfo | BuiltinKind) -> str:
    """kube-apiserver's name for a kind's schema: the group reversed, then version and kind
    (`io.k8s.api.<group>` for Kubernetes' built-in kinds, as kube-openapi names them)."""
    if isinstance(info, BuiltinKind):
        return ".".join(["io.k8s.api", info.group.split(".")[0] or "core", info.version, info.kind])
    return ".".join([*reversed(info.group.split(".")), info.version, info.kind])


def _group_version(info: KindInfo | BuiltinKind) -> str:
    return f"apis/{info.group}/{info.version}" if info.group else f"api/{info.version}"


def group_versions() -> list[str]:
    """`apis/<group>/<version>` (`api/v1` for the core group) of every served group version: the
    registry's, then the built-in ones the shadow API serves."""
    kinds: list[KindInfo | BuiltinKind] = [*all_kinds(), *BUILTIN_KINDS]
    return list(dict.fromkeys(_group_version(info) for info in kinds))


def _object_meta() -> Schema:
    schema = ObjectMeta.model_json_schema(by_alias=True, mode="validation")
    return structural(schema, schema.get("$defs", {}), "ObjectMeta")


def kind_schema(info: KindInfo, meta_ref: str) -> Schema:
    """The kind's schema, its `metadata` a reference to ObjectMeta at `meta_ref`."""
    schema = openapi_schema(info)
    schema["properties"]["metadata"] = {"description": _METADATA_DESCRIPTION, "allOf": [{"$ref": meta_ref}]}
    schema["x-kubernetes-group-version-kind"] = [{"group": info.group, "kind": info.kind, "version": info.version}]
    return schema


def _builtin_schema(kind: BuiltinKind) -> Schema:
    """A built-in kind's schema: any object (the hub stores it as given, in a Manifest), tagged with
    its GVK so kubectl finds it and lets the server validate."""
    return {
        "type": "object",
        "description": f"{kind.kind} ({kind.api_version}), stored by the hub as given, in a Manifest.",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": [{"group": kind.group, "kind": kind.kind, "version": kind.version}],
    }


def _operations(info: KindInfo | BuiltinKind, tag: str) -> dict[str, Any]:
    """The list path and the item path's PATCH of a kind. kubectl reads only the schemas, except
    that before a validated `apply` it looks for the kind's PATCH operation and its
    `fieldValidation` parameter (cli-runtime's query-param verifier); without it kubectl falls
    back to /openapi/v2 in protobuf. The PATCH body types are the ones the hub takes: no
    strategic merge, which kubectl's apply would otherwise pick."""
    ref = {"$ref": f"#/components/schemas/{definition_name(info)}"}
    gvk = {"group": info.group, "kind": info.kind, "version": info.version}
    scope = "/namespaces/{namespace}" if info.namespaced else ""
    collection = f"/{_group_version(info)}{scope}/{info.plural}"
    patch_types: tuple[str, ...] = ("application/merge-patch+json", "application/json-patch+json")
    patch_types += ("application/apply-patch+yaml",)
    if isinstance(info, BuiltinKind):  # kubectl apply's, merge keys guessed (hub/shadow.py)
        patch_types += ("application/strategic-merge-patch+json",)
    return {
        collection: {
            "get": {
                "operationId": f"list{info.kind}",
                "tags": [tag],
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}},
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "list",
            }
        },
        collection + "/{name}": {
            "patch": {
                "operationId": f"patch{info.kind}",
                "tags": [tag],
                "parameters": [
                    {"name": name, "in": "query", "schema": {"type": "string"}}
                    for name in ("dryRun", "fieldManager", "fieldValidation", "force")
                ],
                "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in patch_types}},
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}},
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "patch",
            }
        },
    }


def v3_group_version(group_version: str) -> Schema:
    """The OpenAPI v3 document of one `apis/<group>/<version>`."""
    kinds = [info for info in all_kinds() if _group_version(info) == group_version]
    builtins = [kind for kind in BUILTIN_KINDS if _group_version(kind) == group_version]
    if not kinds and not builtins:
        raise KeyError(group_version)
    meta_ref = f"#/components/schemas/{OBJECT_META}"
    schemas: Schema = {OBJECT_META: _object_meta()}
    paths: Schema = {}
    for info in kinds:
        schemas[definition_name(info)] = kind_schema(info, meta_ref)
        paths.update(_operations(info, f"{info.group}_{info.version}"))
    for kind in builtins:
        schemas[definition_name(kind)] = _builtin_schema(kind)
        paths.update(_operations(kind, f"{kind.group or 'core'}_{kind.version}"))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Clusternet-NATS", "version": group_version.rsplit("/", 1)[-1]},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def digest(document: Schema) -> str:
    """The `hash` kubectl caches a v3 document by: changes whenever the document does."""
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()[:64].upper()


def v3_root() -> Schema:
    """`/openapi/v3`: where each group version's document is, with its hash."""
    return {
        "paths": {
            gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest(v3_group_version(gv))}"}
            for gv in group_versions()
        }
    }


def _v2(node: Any) -> Any:
    """An OpenAPI v3 schema node in Swagger 2.0's terms: references under #/definitions and
    int-or-string as kube-openapi writes it in v2 (no type, the extension alone)."""
    if isinstance(node, dict):
        out = {key: _v2(value) for key, value in node.items()}
        if "$ref" in out:
            out["$ref"] = out["$ref"].replace("#/components/schemas/", "#/definitions/")
        if out.get("x-kubernetes-int-or-string"):
            out.pop("anyOf", None)
        return out
    if isinstance(node, list):
        return [_v2(item) for item in node]
    return node


def v2() -> Schema:
    """`/openapi/v2`: every served kind in one Swagger 2.0 document."""
    definitions: Schema = {}
    paths: Schema = {}
    for gv in group_versions():
        document = v3_group_version(gv)
        definitions.update(document["components"]["schemas"])
        paths.update(document["paths"])
    return {
        "swagger": "2.0",
        "info": {"title": "Clusternet-NATS", "version": "v1"},
        "paths": _v2(copy.deepcopy(paths)),
        "definitions": _v2(definitions),
    }


__all__ = ["definition_name", "digest", "group_versions", "kind_schema", "v2", "v3_group_version", "v3_root"]

"""CustomResourceDefinitions of every kind, generated from the pydantic models.

Why generate: the models are the single source of truth, and a CRD written by hand would drift
from them. A kube-apiserver accepts only *structural* OpenAPI v3 schemas, so pydantic's JSON
Schema is rewritten: `$ref`s inlined, `anyOf [X, null]` collapsed to X (absent is how Kubernetes
says null), free-form objects marked `x-kubernetes-preserve-unknown-fields`, exclusive bounds in
OpenAPI 3.0's boolean form, and the object's own `metadata` left to the API server. Names, scope,
status subresource, categories and printer columns are Clusternet's, from the registry and
`api.printer_columns`.

Usage: ``python -m clusternet_nats.api.crds [--check] [OUTDIR]`` (OUTDIR defaults to
``deploy/k8s/crds``); ``--check`` exits 1 when the committed files differ from the models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from clusternet_nats.api import generated
from clusternet_nats.api.printer_columns import crd_columns
from clusternet_nats.api.registry import KindInfo, all_kinds

Schema = dict[str, Any]

# JSON Schema keywords a structural schema may keep as they are.
_KEPT = (
    "description",
    "type",
    "format",
    "enum",
    "pattern",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "minimum",
    "maximum",
    "required",
    "x-kubernetes-int-or-string",
)


class SchemaError(ValueError):
    """A model whose JSON Schema has no structural equivalent."""


def _resolve(node: Schema, defs: Schema) -> Schema:
    while "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _collapse_nullable(node: Schema, defs: Schema, path: str) -> Schema:
    branches = [b for b in node["anyOf"] if _resolve(b, defs).get("type") != "null"]
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if node.get("x-kubernetes-int-or-string"):
        return node
    if len(branches) != 1:
        raise SchemaError(f"{path}: anyOf with {len(branches)} non-null branches is not structural")
    return {**rest, **_resolve(branches[0], defs)}


_INT_RANGES = {"int32": 31, "int64": 63}


def _integer_format(out: Schema) -> None:
    """Full-width bounds as `format: int32|int64`, as Clusternet's CRDs have them.

    The apiserver reads bounds as float64, where 2^63-1 rounds up and overflows: a schema with
    `maximum: 9223372036854775807` rejects every value. The format says the same thing safely.
    """
    for name, bits in _INT_RANGES.items():
        if out.get("type") == "integer" and out.get("maximum") == 2**bits - 1:
            del out["maximum"]
            if out.get("minimum") == -(2**bits):
                del out["minimum"]
            out["format"] = name


def structural(node: Schema, defs: Schema, path: str = "") -> Schema:
    """One JSON Schema node as a structural OpenAPI v3 schema node."""
    node = _resolve(node, defs)
    if "anyOf" in node:
        node = _collapse_nullable(node, defs, path)
    if "const" in node:
        node = {**{k: v for k, v in node.items() if k != "const"}, "enum": [node["const"]]}
    out: Schema = {key: node[key] for key in _KEPT if key in node}
    if node.get("default") is not None:
        out["default"] = node["default"]
    for bound, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if bound in node:
            out[inclusive], out[bound] = node[bound], True
    _integer_format(out)
    if "x-kubernetes-int-or-string" in node:
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return out
    if "items" in node:
        out["items"] = structural(node["items"], defs, path + "[]")
    extra = node.get("additionalProperties")
    if "properties" in node:
        out["properties"] = {k: structural(v, defs, f"{path}.{k}") for k, v in node["properties"].items()}
    if isinstance(extra, dict):
        out["additionalProperties"] = structural(extra, defs, path + "{}")
    free_form = extra is True or (not node.get("properties") and not isinstance(extra, dict) and "type" not in node)
    if free_form:
        out["type"] = "object"
        out["x-kubernetes-preserve-unknown-fields"] = True
        if not node.get("properties"):
            out.pop("properties", None)
    if "type" not in out:
        raise SchemaError(f"{path or '<root>'}: no type")
    return out


def openapi_schema(info: KindInfo) -> Schema:
    """The kind's structural openAPIV3Schema."""
    model_schema = info.model.model_json_schema(by_alias=True, mode="validation")
    schema = structural(model_schema, model_schema.get("$defs", {}), info.kind)
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


def crd(info: KindInfo) -> Schema:
    """The CustomResourceDefinition of one kind."""
    names: Schema = {
        "categories": list(info.categories),
        "kind": info.kind,
        "listKind": f"{info.kind}List",
        "plural": info.plural,
        "singular": info.singular,
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    version: Schema = {"name": info.version, "served": True, "storage": True}
    columns = crd_columns(info.kind)
    if columns:
        version["additionalPrinterColumns"] = [c.to_crd() for c in columns]
    version["schema"] = {"openAPIV3Schema": openapi_schema(info)}
    if info.status_bucket is not None:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{info.plural}.{info.group}"},
        "spec": {
            "group": info.group,
            "names": names,
            "scope": "Namespaced" if info.namespaced else "Cluster",
            "versions": [version],
        },
    }


def generate() -> dict[Path, str]:
    """File name -> YAML for every kind, named as Clusternet names its CRD files."""
    files: dict[Path, str] = {}
    for info in all_kinds():
        text = yaml.safe_dump(crd(info), sort_keys=False, allow_unicode=True, width=120)
        files[Path(f"{info.group}_{info.plural}.yaml")] = "---\n" + text
    files[Path("kustomization.yaml")] = yaml.safe_dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": sorted(str(p) for p in files),
        },
        sort_keys=False,
    )
    return files


def main(argv: Sequence[str] | None = None) -> int:
    return generated.main(generate, "clusternet_nats.api.crds", "deploy/k8s/crds", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())

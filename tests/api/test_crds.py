"""The generated CRDs: committed, structural, Clusternet's names and columns, same verdicts.

A kube-apiserver refuses non-structural schemas, so the walk below checks what it checks; the
examples and the full objects of `test_crd_agreement` must validate against OUR CRD schema as
they do against Clusternet's (defaults applied first, unknown fields rejected).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from clusternet_nats.api import crds, generated, registry
from test_crd_agreement import CRDS, FORMATS, FULL, KINDS, _examples, _strict, apply_defaults, crd_errors

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "deploy" / "k8s" / "crds"
OURS = {info.kind: crds.crd(info) for info in registry.all_kinds()}


def _our_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = OURS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


OUR_VALIDATORS = {
    kind: jsonschema.Draft202012Validator(_strict(_our_schema(kind)), format_checker=FORMATS) for kind in KINDS
}


def our_errors(obj: dict[str, Any]) -> list[str]:
    data = copy.deepcopy(obj)
    apply_defaults(_our_schema(obj["kind"]), data)
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in OUR_VALIDATORS[obj["kind"]].iter_errors(data)
    ]


def test_committed_crds_equal_generated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generated.drifted(crds.generate, COMMITTED) == [], "regenerate with: python -m clusternet_nats.api.crds"
    assert len(list(COMMITTED.glob("*_*.yaml"))) == 11
    assert crds.main(["--check", str(tmp_path)]) == 1
    assert crds.main([str(tmp_path)]) == 0
    target = tmp_path / "apps.clusternet.io_subscriptions.yaml"
    target.write_text(target.read_text().replace("- subs\n", "- subz\n"))
    capsys.readouterr()
    assert crds.main(["--check", str(tmp_path)]) == 1
    assert str(target) in capsys.readouterr().err


@pytest.mark.parametrize("kind", KINDS)
def test_names_scope_columns_and_subresources_are_clusternets(kind: str) -> None:
    theirs, ours = CRDS[kind], OURS[kind]
    assert ours["metadata"]["name"] == theirs["metadata"]["name"]
    for key in ("group", "names", "scope"):
        assert ours["spec"][key] == theirs["spec"][key], key
    (their_version,) = theirs["spec"]["versions"]
    (our_version,) = ours["spec"]["versions"]
    for key in ("name", "served", "storage", "additionalPrinterColumns"):
        assert our_version.get(key) == their_version.get(key), key
    # controller-gen writes an empty `subresources: {}` for some kinds; it means none.
    assert our_version.get("subresources", {}) == (their_version.get("subresources") or {})


def _structural_problems(node: dict[str, Any], path: str) -> list[str]:
    problems = [f"{path}: {key}" for key in ("$ref", "$defs", "oneOf", "allOf", "title", "const") if key in node]
    if node.get("additionalProperties") is False or ("properties" in node and "additionalProperties" in node):
        problems.append(f"{path}: additionalProperties")
    if "anyOf" in node and not node.get("x-kubernetes-int-or-string"):
        problems.append(f"{path}: anyOf")
    if "type" not in node and not node.get("x-kubernetes-int-or-string"):
        problems.append(f"{path}: no type")
    if node.get("default", 0) is None:
        problems.append(f"{path}: null default")
    # The apiserver reads bounds as float64: beyond 2^53 they round (2^63-1 overflows to -2^63).
    problems += [
        f"{path}: {key} not exact as a float" for key in ("minimum", "maximum") if abs(node.get(key, 0)) > 2**53
    ]
    for key, child in node.get("properties", {}).items():
        problems += _structural_problems(child, f"{path}.{key}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            problems += _structural_problems(node[key], f"{path}.{key}")
    return problems


@pytest.mark.parametrize("kind", KINDS)
def test_schemas_are_structural(kind: str) -> None:
    schema = _our_schema(kind)
    assert _structural_problems(schema, kind) == []
    assert schema["properties"]["metadata"] == {"type": "object"}


def test_free_form_quantity_and_bytes_fields() -> None:
    manifest = _our_schema("Manifest")["properties"]["template"]
    assert manifest == {
        "description": "Template defines the raw Kubernetes resource",
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    raw = _our_schema("Description")["properties"]["spec"]["properties"]["raw"]["items"]
    assert raw == {"type": "string", "format": "byte"}
    allocatable = _our_schema("ManagedCluster")["properties"]["status"]["properties"]["allocatable"]
    assert allocatable["additionalProperties"]["x-kubernetes-int-or-string"] is True
    scheduling = _our_schema("Subscription")["properties"]["spec"]["properties"]["schedulingStrategy"]
    assert scheduling["default"] == "Replication" and "Dividing" in scheduling["enum"]


@pytest.mark.parametrize("doc", _examples(), ids=lambda d: f"{d['kind']}:{d['metadata']['name']}")
def test_examples_valid_against_our_crds_as_against_clusternets(doc: dict[str, Any]) -> None:
    assert crd_errors(doc) == []
    assert our_errors(doc) == []


@pytest.mark.parametrize("kind", KINDS)
def test_full_objects_valid_against_our_crds(kind: str) -> None:
    assert our_errors(FULL[kind]) == []


def test_our_crds_reject_what_clusternets_reject() -> None:
    sub = copy.deepcopy(FULL["Subscription"])
    sub["spec"]["schedulingStrategy"] = "Broadcast"
    sub["spec"]["priority"] = "high"
    sub["spec"]["typo"] = 1
    errors = our_errors(sub)
    assert len(errors) == 3 and len(crd_errors(sub)) == 3
    assert any(e.startswith("spec.schedulingStrategy") for e in errors)


def test_yaml_loads_as_crd() -> None:
    for path in COMMITTED.glob("*_*.yaml"):
        crd = yaml.safe_load(path.read_text())
        assert crd["kind"] == "CustomResourceDefinition"
        assert path.name == f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"

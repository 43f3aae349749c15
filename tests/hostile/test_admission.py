"""domain/admission.py: what kube-apiserver refuses, in its words, and the bridge holding parent
objects to the same door (limits and admission) before publishing them."""

from __future__ import annotations

from typing import Any

import pytest
from clusternet_nats.api import ObjectError
from clusternet_nats.bridge.objects import to_model
from clusternet_nats.domain.admission import MAX_ANNOTATIONS_BYTES, refusals
from clusternet_nats.domain.dividing import static_divide


def workload(kind: str, spec: dict[str, Any], api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


def described(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(error.field, error.message) for error in refusals(body)]


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_negative_replicas(kind: str) -> None:
    assert described(workload(kind, {"replicas": -4})) == [
        ("spec.replicas", "Invalid value: -4: must be greater than or equal to 0")
    ]
    assert described(workload(kind, {"replicas": 0})) == []


def test_job_parallelism_and_completions() -> None:
    body = workload("Job", {"parallelism": -1, "completions": "3"}, "batch/v1")
    assert described(body) == [
        ("spec.parallelism", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.completions", 'Invalid value: "3": must be an integer'),
    ]


def test_container_quantities() -> None:
    containers = [
        {"name": "a", "resources": {"limits": {"cpu": "2 cores"}, "requests": {"memory": "64Mi"}}},
        {"name": "b", "resources": {"requests": {"cpu": "-100m", "memory": True}}},
    ]
    body = workload("Deployment", {"template": {"spec": {"containers": containers}}})
    errors = described(body)
    assert [field for field, _ in errors] == [
        "spec.template.spec.containers[0].resources.limits[cpu]",
        "spec.template.spec.containers[1].resources.requests[cpu]",
        "spec.template.spec.containers[1].resources.requests[memory]",
    ]
    assert errors[0][1].startswith('Invalid value: "2 cores": quantities must match the regular expression')
    assert errors[1][1] == 'Invalid value: "-100m": must be greater than or equal to 0'


def test_cronjob_pod_spec_and_pods() -> None:
    cron = workload("CronJob", {"jobTemplate": {"spec": {"template": {"spec": {"initContainers": [
        {"name": "i", "resources": {"limits": {"cpu": "x"}}}]}}}}}, "batch/v1")
    field = "spec.jobTemplate.spec.template.spec.initContainers[0].resources.limits[cpu]"
    assert [f for f, _ in described(cron)] == [field]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "1Gi"}}}]}}
    assert described(pod) == []


def test_annotations_over_256_kib() -> None:
    body = workload("ConfigMap", {}, "v1")
    body["metadata"]["annotations"] = {"a": "x" * MAX_ANNOTATIONS_BYTES}
    assert described(body) == [("metadata.annotations", f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes")]


def test_a_manifest_is_judged_by_its_template() -> None:
    manifest = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Manifest", "metadata": {"name": "m"},
                "template": workload("Deployment", {"replicas": -1})}
    errors = refusals(manifest)
    assert [(e.kind, e.name, e.field) for e in errors] == [("Manifest", "m", "template.spec.replicas")]


def test_wrong_shapes_are_left_to_the_model_not_crashed_on() -> None:
    for body in ({}, {"kind": 3}, {"kind": "Deployment", "spec": []}, {"kind": "Deployment", "spec": {"template": 1}},
                 {"kind": "Pod", "spec": {"containers": [1, {"resources": []}, {"resources": {"limits": []}}]}},
                 {"kind": "Manifest", "template": "x"}, {"kind": "ConfigMap", "metadata": {"annotations": []}}):
        assert refusals(body) == []


def test_the_bridge_refuses_what_the_hub_door_refuses() -> None:
    deep: Any = "leaf"
    for _ in range(150):
        deep = {"a": deep}
    parent = workload("ConfigMap", {}, "v1") | {"data": deep}
    with pytest.raises(ObjectError, match="nested deeper than 100 levels"):
        to_model(parent)
    with pytest.raises(ObjectError, match=r"spec\.replicas: Invalid value: -4") as raised:
        to_model(workload("Deployment", {"replicas": -4}))
    assert "on the parent apiserver" in str(raised.value)
    assert to_model(workload("Deployment", {"replicas": 2})).kind == "Manifest"


def test_a_negative_count_is_never_divided_into_negative_shares() -> None:
    assert static_divide(-4, [2, 1]) == [0, 0]
    assert static_divide(4, [2, 1]) == [3, 1]

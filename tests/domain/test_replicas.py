"""One replica's requirements and the desired replicas of a feed's workload (domain/replicas.py).

The requirement cases are Clusternet's (pkg/controllers/apps/feedinventory/utils/utils_test.go,
TestPluginParser: 5 cases), the parser cases its deployment, replicaset and statefulset tests
(2 cases each, same objects under each kind)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.quantity import parse_quantity
from clusternet_nats.domain.replicas import (
    ReplicaError,
    ReplicaKind,
    ReplicaKinds,
    carries_replicas,
    feed_order,
    in_tree_kinds,
    replica_requirements,
)


def container(
    name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None
) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"name": name, "image": "nginx", **({"resources": resources} if resources else {})}


BEST_EFFORT = container("best-effort")
FOO = container("burstable-with-foo-resource", {"memory": "128Mi", "foo": "2"}, {"memory": "256Mi", "foo": "3"})
GUARANTEED = container("guaranteed", {"memory": "128Mi", "cpu": "500m"}, {"memory": "128Mi", "cpu": "500m"})

CASES: list[tuple[str, dict[str, Any], dict[str, str], dict[str, str]]] = [
    ("empty requirements", {"containers": [container("front-end"), container("rss-reader")]}, {}, {}),
    (
        "multiple-qos-with-foo-resource",
        {"containers": [BEST_EFFORT, FOO, GUARANTEED]},
        {"memory": "256Mi", "cpu": "500m", "foo": "2"},
        {"memory": "384Mi", "cpu": "500m", "foo": "3"},
    ),
    (
        "init-containers-small-quota",
        {
            "initContainers": [
                container("init-container-1"),
                container("init-container-2", {"memory": "128Mi", "bar": "1"}, {"memory": "256Mi", "bar": "2"}),
            ],
            "containers": [BEST_EFFORT, FOO, GUARANTEED],
        },
        {"memory": "256Mi", "cpu": "500m", "foo": "2", "bar": "1"},
        {"memory": "384Mi", "cpu": "500m", "foo": "3", "bar": "2"},
    ),
    (
        "init-containers-large-quota",
        {
            "initContainers": [
                container("init-container-1"),
                container("init-container-2", {"memory": "512Mi", "foo": "3"}, {"memory": "512Mi", "foo": "4"}),
            ],
            "containers": [BEST_EFFORT, FOO, GUARANTEED],
        },
        {"memory": "512Mi", "cpu": "500m", "foo": "3"},
        {"memory": "512Mi", "cpu": "500m", "foo": "4"},
    ),
    (
        "multiple-qos-with-empty-request",
        {
            "containers": [
                BEST_EFFORT,
                container("burstable", {"memory": "128Mi", "cpu": "500m"}, {"memory": "256Mi", "cpu": "500m"}),
                container("guaranteed", None, {"memory": "128Mi", "cpu": "500m"}),
            ]
        },
        {"memory": "256Mi", "cpu": "1000m"},
        {"memory": "384Mi", "cpu": "1000m"},
    ),
]


def exact(amounts: dict[str, str] | None) -> dict[str, Fraction]:
    return {name: parse_quantity(q) for name, q in (amounts or {}).items()}


@pytest.mark.parametrize(("name", "pod_spec", "requests", "limits"), CASES, ids=[c[0] for c in CASES])
def test_requirements_as_clusternet_computes_them(
    name: str, pod_spec: dict[str, Any], requests: dict[str, str], limits: dict[str, str]
) -> None:
    resources = replica_requirements(pod_spec).resources
    assert resources is not None
    assert exact(resources.requests) == exact(requests)
    assert exact(resources.limits) == exact(limits)


def test_sums_print_as_kubernetes_prints_them() -> None:
    resources = replica_requirements({"containers": [FOO, GUARANTEED]}).resources
    assert resources is not None
    assert resources.requests == {"cpu": "500m", "foo": "2", "memory": "256Mi"}
    doubled = replica_requirements({"containers": [GUARANTEED, GUARANTEED, container("x", {"cpu": "0.25"})]})
    assert doubled.resources is not None and doubled.resources.requests == {"cpu": "1250m", "memory": "256Mi"}


def workload(kind: str, api_version: str = "apps/v1", **spec: Any) -> dict[str, Any]:
    pod_spec = {
        "nodeSelector": {"disktype": "ssd"},
        "tolerations": [{"key": "example-key", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
        "priorityClassName": "high",
        "containers": [BEST_EFFORT, FOO, GUARANTEED],
    }
    spec = {**spec, "template": {"spec": pod_spec}}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "qos-demo"}, "spec": spec}


def feed(kind: str, api_version: str = "apps/v1") -> Feed:
    return Feed(api_version=api_version, kind=kind, namespace="default", name="qos-demo")


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_workloads_give_replicas_path_and_requirements(kind: str) -> None:
    order = feed_order(feed(kind), workload(kind, replicas=2))
    assert (order.desired_replicas, order.replica_json_path) == (2, "/spec/replicas")
    req = order.replica_requirements
    assert req is not None and req.resources is not None
    assert req.node_selector == {"disktype": "ssd"}
    assert req.tolerations is not None and req.tolerations[0].key == "example-key"
    assert req.affinity is not None and "nodeAffinity" in req.affinity
    assert req.priority_class_name == "high"
    assert exact(req.resources.requests) == exact({"memory": "256Mi", "cpu": "500m", "foo": "2"})
    assert order.name == "qos-demo" and order.kind == kind


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_empty_requirements_still_carry_replicas(kind: str) -> None:
    spec = {"replicas": 2, "template": {"spec": {"containers": [BEST_EFFORT]}}}
    template = {"apiVersion": "apps/v1", "kind": kind, "spec": spec}
    order = feed_order(feed(kind), template)
    assert order.desired_replicas == 2
    assert order.replica_requirements is not None and order.replica_requirements.resources is not None
    assert order.replica_requirements.resources.requests == {}


def test_job_parallelism_and_other_kinds() -> None:
    job = feed_order(feed("Job", "batch/v1"), workload("Job", "batch/v1", parallelism=4))
    assert (job.desired_replicas, job.replica_json_path) == (4, "/spec/parallelism")
    config = feed_order(feed("ConfigMap", "v1"), {"apiVersion": "v1", "kind": "ConfigMap", "data": {}})
    assert (config.desired_replicas, config.replica_requirements, config.replica_json_path) == (None, None, None)
    absent = feed_order(feed("Deployment"), {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {}})
    assert absent.desired_replicas is None and absent.replica_json_path == "/spec/replicas"
    assert not carries_replicas([config, absent]) and carries_replicas([config, job])


def test_a_crd_joins_by_registering_its_replica_path() -> None:
    kinds = in_tree_kinds()
    kinds.register("example.io/v1", "Worker", ReplicaKind("/spec/size", "/spec/pod"))
    spec = {"size": 3, "pod": {"containers": [GUARANTEED]}}
    template = {"apiVersion": "example.io/v1", "kind": "Worker", "spec": spec}
    order = feed_order(feed("Worker", "example.io/v1"), template, kinds)
    assert (order.desired_replicas, order.replica_json_path) == (3, "/spec/size")
    assert order.replica_requirements is not None and order.replica_requirements.resources is not None
    assert order.replica_requirements.resources.requests == {"cpu": "500m", "memory": "128Mi"}
    with pytest.raises(ValueError, match="JSON pointer"):
        ReplicaKinds().register("example.io/v1", "Worker", ReplicaKind("spec.size"))


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"spec": {"replicas": "two"}}, "Deployment default/qos-demo: /spec/replicas: expected a non-negative integer"),
        ({"spec": {"replicas": -1}}, "/spec/replicas: expected a non-negative integer, got -1"),
        ({"spec": {"replicas": 1, "template": {"spec": {"containers": [container("c", {"cpu": "lots"})]}}}},
         "spec.template.spec.containers[0].resources.requests.cpu: invalid quantity 'lots'"),
        (
            {"spec": {"template": {"spec": {"tolerations": [{"tolerationSeconds": "soon"}]}}}},
            "spec.template.spec.tolerations",
        ),
        ({"spec": {"template": {"spec": {"containers": "nginx"}}}}, "spec.template.spec.containers: expected a list"),
        ({"spec": {"template": {"spec": "x"}}}, "/spec/template/spec: expected a pod spec object"),
    ],
)
def test_malformed_workloads_name_the_feed_and_field(template: dict[str, Any], message: str) -> None:
    with pytest.raises(ReplicaError, match=message.replace("[", r"\[").replace("]", r"\]")):
        feed_order(feed("Deployment"), {"apiVersion": "apps/v1", "kind": "Deployment", **template})

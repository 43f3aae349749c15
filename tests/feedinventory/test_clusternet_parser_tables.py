"""Clusternet's FeedInventory parser tables, through `feed_order` (domain/replicas.py), the function
the hub's FeedInventory controller writes each feed's entry with.

Ported (objects and expected outputs re-expressed as data; ids `<Kind>/<Go case name>`):

* pkg/controllers/apps/feedinventory/deployment/deployment_test.go, statefulset/statefulset_test.go
  and replicaset/replicaset_test.go: TestPluginParser, 4 cases each (12 in all). The three tables
  hold the same four objects under each kind; every case checks the desired replicas, the whole
  replica requirements (nodeSelector, tolerations, affinity, requests and limits) and the
  replicaJsonPath, as the Go tests do. Quantities are compared as Kubernetes prints them
  (Clusternet compares parsed Quantities), the numbers `"foo": 2` given as JSON numbers as there.
* pkg/controllers/apps/feedinventory/feedinventory_test.go: TestGetGroupVersionKind, 1 case
  ("Deployment"). Clusternet reads the apiVersion and kind of a feed's object to pick its parser
  plugin; ours looks the object's (apiVersion, kind) up in the registry of replica kinds
  (`IN_TREE_KINDS`) and splits apiVersion with `Feed.group_version`: both are checked.

Not ported here: feedinventory/utils/utils_test.go (its 5 requirement cases are in
tests/domain/test_replicas.py). One difference of form, not of value: with no requests or limits
Clusternet's JSON says `"resources": {}`, ours `"resources": {"limits": {}, "requests": {}}`
(same meaning to any reader; the expected requirements below are compared as models).
"""

from __future__ import annotations

from typing import Any

import pytest
from clusternet_nats.api.apps import ReplicaRequirements
from clusternet_nats.api.meta import Feed
from clusternet_nats.domain.replicas import IN_TREE_KINDS, feed_order

KINDS = ("Deployment", "StatefulSet", "ReplicaSet")
"""deployment_test.go, statefulset_test.go, replicaset_test.go."""


def container(
    name: str, image: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None
) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"name": name, "image": image, **({"resources": resources} if resources else {})}


def workload(kind: str, name: str, app: str, pod_spec: dict[str, Any]) -> dict[str, Any]:
    labels = {"app": app}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


NODE_SELECTOR = {"disktype": "ssd"}
TOLERATIONS = [{"key": "example-key", "operator": "Exists", "effect": "NoSchedule"}]
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
            ]
        }
    }
}
QOS_CONTAINERS = [
    container("best-effort", "nginx"),
    container("burstable-with-foo-resource", "nginx", {"memory": "128Mi", "foo": 2}, {"memory": "256Mi", "foo": 3}),
    container("guaranteed", "nginx", {"memory": "128Mi", "cpu": "500m"}, {"memory": "128Mi", "cpu": "500m"}),
]


def qos_pod_spec(init_containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": NODE_SELECTOR, "tolerations": TOLERATIONS}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    return {**spec, "containers": QOS_CONTAINERS, "affinity": AFFINITY}


def placed(requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    """The expected requirements of the three cases that place pods (selector, tolerations, affinity)."""
    return {
        "nodeSelector": NODE_SELECTOR,
        "tolerations": TOLERATIONS,
        "affinity": AFFINITY,
        "resources": {"requests": requests, "limits": limits},
    }


Case = tuple[str, str, str, dict[str, Any], dict[str, Any]]
"""Go case name, object name, app label, pod spec, expected replica requirements."""

CASES: list[Case] = [
    (
        "empty requirements",
        "rss-site",
        "web",
        {"containers": [container("front-end", "nginx"), container("rss-reader", "rss-php-nginx:v1")]},
        {"resources": {"requests": {}, "limits": {}}},
    ),
    (
        "multiple-qos-with-foo-resource",
        "qos-demo",
        "qos-demo",
        qos_pod_spec(),
        placed({"cpu": "500m", "memory": "256Mi", "foo": "2"}, {"cpu": "500m", "memory": "384Mi", "foo": "3"}),
    ),
    (
        "init-containers-small-quota",
        "qos-demo",
        "qos-demo",
        qos_pod_spec(
            [
                container("init-container-1", "image-test:tag1"),
                container(
                    "init-container-2", "image-test:tag2", {"memory": "128Mi", "bar": 1}, {"memory": "256Mi", "bar": 2}
                ),
            ]
        ),
        placed(
            {"cpu": "500m", "memory": "256Mi", "foo": "2", "bar": "1"},
            {"cpu": "500m", "memory": "384Mi", "foo": "3", "bar": "2"},
        ),
    ),
    (
        "init-containers-large-quota",
        "qos-demo",
        "qos-demo",
        qos_pod_spec(
            [
                container("init-container-1", "image-test:tag1"),
                container(
                    "init-container-2", "image-test:tag2", {"memory": "512Mi", "foo": 3}, {"memory": "512Mi", "foo": 4}
                ),
            ]
        ),
        placed({"cpu": "500m", "memory": "512Mi", "foo": "3"}, {"cpu": "500m", "memory": "512Mi", "foo": "4"}),
    ),
]

PARSER_CASES = [(kind, *case) for kind in KINDS for case in CASES]


@pytest.mark.parametrize(
    ("kind", "case", "name", "app", "pod_spec", "expected"), PARSER_CASES, ids=[f"{c[0]}/{c[1]}" for c in PARSER_CASES]
)
def test_plugin_parser(
    kind: str, case: str, name: str, app: str, pod_spec: dict[str, Any], expected: dict[str, Any]
) -> None:
    feed = Feed(api_version="apps/v1", kind=kind, namespace="default", name=name)
    order = feed_order(feed, workload(kind, name, app, pod_spec))
    assert order.desired_replicas == 2
    assert order.replica_json_path == "/spec/replicas"
    assert order.replica_requirements == ReplicaRequirements.model_validate(expected)
    # as the FeedInventory carries them on the wire
    wire = order.to_json_dict()
    assert wire["replicaRequirements"]["resources"] == expected["resources"]
    assert "priorityClassName" not in wire["replicaRequirements"]


DEPLOYMENT = workload("Deployment", "my-dep", "my-dep", {"containers": [container("nginx", "nginx")]})


@pytest.mark.parametrize(
    ("template", "group_version_kind"), [(DEPLOYMENT, ("apps", "v1", "Deployment"))], ids=["Deployment"]
)
def test_get_group_version_kind(template: dict[str, Any], group_version_kind: tuple[str, str, str]) -> None:
    feed = Feed(api_version=template["apiVersion"], kind=template["kind"], namespace="default", name="my-dep")
    assert (*feed.group_version(), feed.kind) == group_version_kind
    assert IN_TREE_KINDS.get(template["apiVersion"], template["kind"]) is not None  # the Deployment parser is found
    assert feed_order(feed, template).desired_replicas == 2

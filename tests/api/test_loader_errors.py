"""Loader errors point at the file, the document, the object and the JSON field to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clusternet_nats.api.apps import Globalization, Manifest, Subscription
from clusternet_nats.api.clusters import ClusterRegistrationRequest, ManagedCluster
from clusternet_nats.api.loader import (
    ObjectError,
    ObjectErrors,
    field_path,
    guess_resource,
    load_documents,
    load_path,
    parse_object,
)

NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: foo
"""

SUBSCRIPTION = """\
apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata:
  name: app-demo
spec:
  subscribers:
    - clusterAffinity:
        matchExpressions:
          - key: clusters.clusternet.io/cluster-id
            operator: Exists
  schedulingStrategy: Replication
  feeds:
    - apiVersion: v1
      kind: Namespace
      name: foo
"""


def _error(text: str, source: str = "examples/x.yaml") -> ObjectError:
    with pytest.raises(ObjectError) as caught:
        load_documents(text, source)
    return caught.value


def test_wrong_enum_names_file_document_object_and_field() -> None:
    text = SUBSCRIPTION.replace("schedulingStrategy: Replication", "schedulingStrategy: Copy")
    err = _error(NAMESPACE + "---\n" + text)
    assert not isinstance(err, ObjectErrors)
    assert (err.source, err.document, err.kind, err.name) == ("examples/x.yaml", 2, "Subscription", "default/app-demo")
    assert err.field == "spec.schedulingStrategy"
    assert str(err) == (
        "examples/x.yaml: document 2 (Subscription default/app-demo): "
        "spec.schedulingStrategy: Input should be 'Replication' or 'Dividing'"
    )


def test_nested_field_path_uses_json_names_and_indices() -> None:
    err = _error(SUBSCRIPTION.replace("operator: Exists", "operator: Has"))
    assert err.document == 1
    assert err.field == "spec.subscribers[0].clusterAffinity.matchExpressions[0].operator"
    assert "'In', 'NotIn', 'Exists' or 'DoesNotExist'" in err.message


def test_missing_required_field() -> None:
    text = SUBSCRIPTION.replace("    - clusterAffinity:\n", "    - weight: 1\n      clusterAffinity:\n")
    text = text.replace("      kind: Namespace\n", "")
    err = _error(NAMESPACE + "---\n" + text)
    assert err.field == "spec.feeds[0].kind"
    assert err.message == "Field required"
    assert str(err).startswith("examples/x.yaml: document 2 (Subscription default/app-demo): spec.feeds[0].kind")


def test_several_problems_are_reported_together() -> None:
    text = SUBSCRIPTION.replace("schedulingStrategy: Replication", "schedulingStrategy: Copy\n  priority: high")
    bad_sub = SUBSCRIPTION.replace("name: app-demo", "name: other").replace("  feeds:", "  typo: 1\n  feeds:")
    err = _error(text + "---\n" + NAMESPACE + "---\n" + bad_sub)
    assert isinstance(err, ObjectErrors)
    assert [(e.document, e.name, e.field) for e in err.errors] == [
        (1, "default/app-demo", "spec.schedulingStrategy"),
        (1, "default/app-demo", "spec.priority"),
        (3, "default/other", "spec.typo"),
    ]
    assert err.field == "spec.schedulingStrategy"  # the first problem's attributes
    assert str(err).splitlines()[2] == (
        "examples/x.yaml: document 3 (Subscription default/other): spec.typo: unknown field"
    )


def test_unknown_kind_in_a_clusternet_group() -> None:
    err = _error(NAMESPACE + "---\n" + SUBSCRIPTION.replace("kind: Subscription", "kind: Subscriptoin"))
    assert (err.document, err.kind, err.field) == (2, "Subscriptoin", "kind")
    assert "apps.clusternet.io has no kind 'Subscriptoin' (did you mean Subscription?)" in err.message
    assert "HelmChart" in err.message
    assert str(err).startswith("examples/x.yaml: document 2 (Subscriptoin app-demo): kind: ")

    err = _error(SUBSCRIPTION.replace("apps.clusternet.io/v1alpha1", "clusters.clusternet.io/v1beta1"))
    assert err.field == "kind"
    assert "ManagedCluster" in err.message


def test_wrong_version_of_a_clusternet_kind() -> None:
    err = _error(SUBSCRIPTION.replace("v1alpha1", "v1beta1"))
    assert err.field == "apiVersion"
    assert "apps.clusternet.io/v1alpha1" in err.message


@pytest.mark.parametrize(
    ("drop", "field"),
    [
        ("apiVersion: apps.clusternet.io/v1alpha1\n", "apiVersion"),
        ("kind: Subscription\n", "kind"),
        ("  name: app-demo\n", "metadata.name"),
    ],
)
def test_missing_type_or_name(drop: str, field: str) -> None:
    err = _error(SUBSCRIPTION.replace(drop, "", 1))
    assert err.field == field
    assert err.message == "required field is missing"
    assert str(err).startswith("examples/x.yaml: document 1")


def test_missing_name_of_a_plain_object() -> None:
    err = _error("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    assert (err.kind, err.field) == ("ConfigMap", "metadata.name")


def test_malformed_yaml_has_line_and_column() -> None:
    err = _error(NAMESPACE + "---\n" + "apiVersion: v1\nkind: [Namespace\nmetadata: {name: x}\n")
    assert err.document == 2
    assert err.source == "examples/x.yaml"
    assert str(err) == (
        "examples/x.yaml: document 2: malformed YAML at line 8, column 9: expected ',' or ']', but got ':'"
    )


def test_non_mapping_document_or_metadata() -> None:
    err = _error("- a\n- b\n")
    assert "expected a Kubernetes object (a mapping), got list" in str(err)
    err = _error("apiVersion: v1\nkind: Secret\nmetadata: [x]\n")
    assert (err.field, err.message) == ("metadata", "must be a mapping, not list")


def test_namespace_defaulting_and_dropping() -> None:
    (sub,) = load_documents(SUBSCRIPTION)
    assert isinstance(sub, Subscription) and sub.namespace == "default"
    glob = parse_object(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Globalization",
            "metadata": {"name": "g", "namespace": "qux"},
            "spec": {},
        }
    )
    assert isinstance(glob, Globalization) and glob.metadata.namespace is None
    crr = parse_object(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ClusterRegistrationRequest",
            "metadata": {"name": "clusternet-x", "namespace": "default"},
            "spec": {"clusterId": "dc91021d-2361-4f6d-a404-7c33b9e01118"},
        }
    )
    assert isinstance(crr, ClusterRegistrationRequest) and crr.metadata.namespace is None
    assert crr.spec.sync_mode == "Pull"


def test_quantities_and_bytes_on_the_wire() -> None:
    mcls = parse_object(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ManagedCluster",
            "metadata": {"name": "c", "namespace": "clusternet-abc"},
            "spec": {"clusterId": "dc91021d-2361-4f6d-a404-7c33b9e01118", "syncMode": "Pull"},
            "status": {"capacity": {"cpu": 4, "memory": "16Gi"}, "apiserverURL": "https://x", "kubeQPS": 5},
        }
    )
    assert isinstance(mcls, ManagedCluster)
    assert mcls.status.capacity == {"cpu": "4", "memory": "16Gi"}
    assert mcls.status.apiserver_url == "https://x"
    status = mcls.to_json_dict()["status"]
    assert status["capacity"]["cpu"] == "4"
    assert status["kubeQPS"] == 5.0

    crr = ClusterRegistrationRequest.new(
        "clusternet-x", spec={"cluster_id": "dc91021d-2361-4f6d-a404-7c33b9e01118"}, status={"token": b"secret"}
    )
    assert crr.to_json_dict()["status"]["token"] == "c2VjcmV0"
    assert ClusterRegistrationRequest.model_validate(crr.to_json_dict()).status.token == b"secret"


def test_plain_objects_become_manifests() -> None:
    deploy = parse_object({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}})
    assert isinstance(deploy, Manifest)
    assert deploy.namespaced_name() == "clusternet-reserved/deployments.default.web"
    assert deploy.template["metadata"] == {"name": "web", "namespace": "default"}
    assert deploy.labels["apps.clusternet.io/config.namespace"] == "default"

    role_group = "rbac.authorization.k8s.io/v1"
    role = parse_object({"apiVersion": role_group, "kind": "ClusterRole", "metadata": {"name": "r", "namespace": "x"}})
    assert role.name == "clusterroles.r"
    assert isinstance(role, Manifest) and "namespace" not in role.template["metadata"]

    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "n"}}
    custom = parse_object(widget)
    assert custom.name == "widgets.n.w"


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        ("Deployment", "deployments"),
        ("Ingress", "ingresses"),
        ("NetworkPolicy", "networkpolicies"),
        ("Gateway", "gateways"),
        ("Endpoints", "endpoints"),
        ("ServiceExport", "serviceexports"),
        ("NodeFeatureRule", "nodefeaturerules"),
    ],
)
def test_guess_resource(kind: str, resource: str) -> None:
    assert guess_resource(kind) == resource


def test_field_path_formatting() -> None:
    assert field_path(("spec", "subscribers", 0, "clusterAffinity")) == "spec.subscribers[0].clusterAffinity"
    assert field_path(("metadata", "labels", "apps.clusternet.io/x")) == 'metadata.labels["apps.clusternet.io/x"]'


def test_load_path_directory_collects_errors_across_files(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a.yaml").write_text(NAMESPACE)
    (tmp_path / "b" / "sub.yml").write_text(SUBSCRIPTION.replace("Replication", "Copy"))
    (tmp_path / "b" / "obj.json").write_text(json.dumps({"apiVersion": "v1", "kind": "Secret"}))
    (tmp_path / "notes.txt").write_text("not: [yaml")
    with pytest.raises(ObjectErrors) as caught:
        load_path(tmp_path)
    assert [(Path(e.source).name, e.document, e.field) for e in caught.value.errors] == [
        ("obj.json", 1, "metadata.name"),
        ("sub.yml", 1, "spec.schedulingStrategy"),
    ]

    (tmp_path / "b" / "sub.yml").write_text(SUBSCRIPTION)
    (tmp_path / "b" / "obj.json").write_text('{"apiVersion": "v1",\n "kind": }')
    with pytest.raises(ObjectError, match=r"obj\.json: document 1: malformed JSON at line 2, column 10"):
        load_path(tmp_path)

    (tmp_path / "b" / "obj.json").unlink()
    assert [o.kind for o in load_path(tmp_path)] == ["Manifest", "Subscription"]


def test_load_path_missing() -> None:
    with pytest.raises(ObjectError, match="no such file or directory"):
        load_path("/nonexistent/clusternet.yaml")

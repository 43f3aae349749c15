"""The kube backend's pure parts: owner marks, records, ordering, addressing, facts, the id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.backends.base import ObjectRef, delete_order, install_order
from clusternet_nats.agent.backends.kube import ownership
from clusternet_nats.agent.backends.kube.applier import ManifestError, identify
from clusternet_nats.agent.backends.kube.clusterid import LEGACY_ID_ANNOTATION, id_from_lease
from clusternet_nats.agent.backends.kube.facts import node_facts, sum_resources, summarize
from clusternet_nats.agent.service import Agent, AgentOptions, Backend
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.kube.discovery import Resource

LONG_OWNER = "clusternet-abcde." + "a-very-long-subscription-name-that-goes-on-and-on-generic"


def test_mark_puts_a_label_sized_hash_and_the_full_owner_on_a_copy() -> None:
    manifest: dict[str, Any] = {"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app": "x"}}}
    marked = ownership.mark(manifest, LONG_OWNER)
    label = marked["metadata"]["labels"][APPLIED_BY_DESCRIPTION]
    assert len(LONG_OWNER) > 63 >= len(label)
    assert marked["metadata"]["labels"]["app"] == "x"
    assert marked["metadata"]["annotations"][ownership.OWNER_ANNOTATION] == LONG_OWNER
    assert manifest["metadata"]["labels"] == {"app": "x"}
    assert ownership.owner_of(marked) == LONG_OWNER
    assert ownership.owner_selector(LONG_OWNER) == f"{APPLIED_BY_DESCRIPTION}={label}"


def test_owner_of_rejects_an_annotation_that_disagrees_with_the_label() -> None:
    marked = ownership.mark({"metadata": {"name": "c"}}, "ns.a")
    marked["metadata"]["annotations"][ownership.OWNER_ANNOTATION] = "ns.b"
    assert ownership.owner_of(marked) is None
    assert ownership.owner_of({"metadata": {"name": "c"}}) is None
    assert ownership.owner_hash("ns.a") != ownership.owner_hash("ns.b")


def test_record_round_trips_owner_and_kinds_and_is_not_selected_as_owned() -> None:
    record = ownership.record(LONG_OWNER, [("v1", "Service"), ("apps/v1", "Deployment"), ("v1", "Service")])
    assert ownership.record_owner(record) == LONG_OWNER
    assert ownership.record_kinds(record) == {("v1", "Service"), ("apps/v1", "Deployment")}
    assert APPLIED_BY_DESCRIPTION not in record["metadata"]["labels"]
    assert len(record["metadata"]["name"]) <= 63


def test_namespaces_and_crds_go_first_and_are_deleted_last() -> None:
    manifests = [
        {"kind": "Deployment"},
        {"kind": "CustomResourceDefinition"},
        {"kind": "Service"},
        {"kind": "Namespace"},
    ]
    assert [m["kind"] for m in install_order(manifests)] == [
        "Namespace",
        "CustomResourceDefinition",
        "Deployment",
        "Service",
    ]
    refs = [ObjectRef("v1", k["kind"], "", k["kind"].lower()) for k in manifests]
    assert [r.kind for r in delete_order(refs)] == ["Deployment", "Service", "CustomResourceDefinition", "Namespace"]


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"kind": "Service", "metadata": {"name": "web"}}, "Service web: apiVersion is required"),
        ({"apiVersion": "v1", "metadata": {"name": "web"}}, "object web: kind is required"),
        ({"apiVersion": "v1", "kind": "Service", "metadata": {}}, "Service (unnamed): metadata.name is required"),
        (
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "w", "namespace": 3}},
            "Service w: metadata.namespace must be a string",
        ),
    ],
)
def test_identify_names_the_object_and_the_missing_field(manifest: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        identify(manifest)


def test_resource_paths_for_core_and_group_kinds() -> None:
    deployments = Resource("apps/v1", "Deployment", "deployments", True)
    namespaces = Resource("v1", "Namespace", "namespaces", False)
    assert deployments.path() == "/apis/apps/v1/deployments"
    assert deployments.path("shop", "web") == "/apis/apps/v1/namespaces/shop/deployments/web"
    assert namespaces.path("", "shop") == "/api/v1/namespaces/shop"


def test_cluster_id_is_the_lease_uid_unless_a_legacy_id_was_migrated() -> None:
    lease: dict[str, Any] = {"metadata": {"uid": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}}
    assert id_from_lease(lease) == "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    lease["metadata"]["annotations"] = {LEGACY_ID_ANNOTATION: "6fa459ea-ee8a-3ca4-894e-db77e160355e"}
    assert id_from_lease(lease) == "6fa459ea-ee8a-3ca4-894e-db77e160355e"


def _node(name: str, ready: str | None, cpu: str, memory: str) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"zone": "a"}},
        "status": {"conditions": conditions, "capacity": resources, "allocatable": resources},
    }


def _pod(node: str, phase: str, cpu: str) -> dict[str, Any]:
    containers = [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]
    return {"spec": {"nodeName": node, "containers": containers}, "status": {"phase": phase}}


def test_facts_count_nodes_by_ready_condition_and_sum_resources() -> None:
    nodes = [
        _node("n1", "True", "4", "8Gi"),
        _node("n2", "False", "2", "4Gi"),
        _node("n3", "Unknown", "500m", "512Mi"),
        _node("n4", None, "1", "1Gi"),
    ]
    pods = [_pod("n1", "Running", "250m"), _pod("n1", "Succeeded", "1"), _pod("n2", "Pending", "1")]
    version = {"gitVersion": "v1.34.4", "platform": "linux/amd64"}
    facts = summarize(version, [True, True, False], nodes, pods, "https://127.0.0.1:6443")
    assert (facts.k8s_version, facts.platform) == ("v1.34.4", "linux/amd64")
    assert (facts.healthz, facts.livez, facts.readyz) == (True, True, False)
    assert (facts.ready_nodes, facts.not_ready_nodes, facts.unknown_nodes, facts.lost_nodes) == (1, 1, 1, 1)
    assert facts.capacity == {"cpu": "7500m", "memory": "13824Mi", "pods": "440"}
    assert facts.allocatable == facts.capacity
    assert (facts.running_pods, facts.total_pods) == (1, 3)
    assert (facts.cpu_usage, facts.memory_usage) == ("250m", "64Mi")
    assert facts.apiserver_url == "https://127.0.0.1:6443"


def test_node_facts_count_what_unfinished_pods_on_each_node_request() -> None:
    nodes = [_node("n1", "True", "4", "8Gi"), _node("n2", "False", "2", "4Gi")]
    pods = [_pod("n1", "Running", "250m"), _pod("n1", "Failed", "1"), _pod("n1", "Pending", "750m")]
    n1, n2 = node_facts(nodes, pods)
    assert (n1.name, n1.ready, n1.labels) == ("n1", True, {"zone": "a"})
    assert n1.requested == {"cpu": "1", "memory": "128Mi", "pods": "2"}
    assert n1.allocatable == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert (n2.ready, n2.requested) == (False, {})


def test_sum_resources_keeps_extended_resources_in_units() -> None:
    assert sum_resources([{"nvidia.com/gpu": "2", "hugepages-2Mi": "2Mi"}, {"nvidia.com/gpu": "1"}]) == {
        "hugepages-2Mi": "2Mi",
        "nvidia.com/gpu": "3",
    }


def test_the_kube_backend_runs_one_real_cluster() -> None:
    with pytest.raises(ValueError, match="--sim-clusters is for --backend sim"):
        Agent(AgentOptions(backend=Backend.KUBE, sim_clusters=2))
    agent = Agent(AgentOptions(backend=Backend.KUBE, kubeconfig=Path("/nonexistent")))
    assert agent.clusters == []  # built once the cluster has given its id

"""The generated CRDs on a real kube-apiserver: accepted (structural), serving Clusternet's
examples, with Clusternet's short names and printer columns in `kubectl get`."""

from __future__ import annotations

import yaml
from clusternet_nats.api import all_kinds, registry
from clusternet_nats.testing import compat

from tests.bridge.conftest import Parent


async def test_every_crd_is_established(parent: Parent) -> None:
    names = (await parent.kubectl("get", "crd", "-o", "name")).split()
    for info in all_kinds():
        assert f"customresourcedefinition.apiextensions.k8s.io/{info.plural}.{info.group}" in names
    resources = await parent.kubectl("api-resources", "--categories", "clusternet", "-o", "name")
    assert len(resources.split()) == len(all_kinds())


async def test_clusternet_examples_pass_server_side_validation(parent: Parent, unique_ns: str) -> None:
    examples = compat.compat_path(compat.EXAMPLES)
    await parent.kubectl("create", "namespace", unique_ns)
    docs = [doc for path in sorted(examples.rglob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]
    clusternet = [doc for doc in docs if doc["apiVersion"].split("/")[0].endswith("clusternet.io")]
    for doc in clusternet:
        if registry.by_kind(doc["kind"]).namespaced:
            doc["metadata"]["namespace"] = unique_ns
        doc["metadata"]["name"] = f"{unique_ns}-{doc['metadata']['name']}"  # cluster-scoped ones too
    out = await parent.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(clusternet))
    assert out.count("(server dry run)") == len(clusternet) >= 20


async def test_invalid_object_is_rejected_naming_the_field(parent: Parent, unique_ns: str) -> None:
    await parent.kubectl("create", "namespace", unique_ns)
    bad = f"""apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {{name: bad, namespace: {unique_ns}}}
spec:
  schedulingStrategy: Broadcast
  feeds: [{{apiVersion: v1, kind: Namespace, name: x}}]
"""
    result = await parent.plane.kubectl_async("apply", "--dry-run=server", "-f", "-", input=bad)
    assert result.returncode != 0
    assert "spec.schedulingStrategy" in result.stderr and "Broadcast" in result.stderr


async def test_printer_columns_and_short_names(parent: Parent, unique_ns: str) -> None:
    await parent.kubectl("create", "namespace", unique_ns)
    await parent.apply(
        f"""apiVersion: apps.clusternet.io/v1alpha1
kind: HelmChart
metadata: {{name: mysql, namespace: {unique_ns}}}
spec: {{repo: "https://charts.example.org", chart: mysql, version: 9.2.0, targetNamespace: db}}
"""
    )
    header, row = (await parent.kubectl("get", "chart", "-n", unique_ns)).splitlines()
    assert header.split() == ["NAME", "CHART", "VERSION", "REPO", "STATUS", "AGE"]
    assert row.split()[:4] == ["mysql", "mysql", "9.2.0", "https://charts.example.org"]

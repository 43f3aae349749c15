"""The real kubectl against the hub: discovery, explain, tables as `cnet get` prints them, and
Clusternet's shadow API (`kubectl get deploy` after applying a Deployment)."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from clusternet_nats.api import all_kinds
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH
from clusternet_nats.hub.testing import ServedHub
from clusternet_nats.testing.kube import ControlPlane

from tests.cli.conftest import run_cnet
from tests.hub.objects import deployment, subs_path, subscription

from .conftest import EDITOR_NAMESPACE, Kubectl

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "crds"
_AGE = re.compile(r"^\d+(s|m|h|d|y)(\d+(s|m|h|d))?$")


def _rows(output: str) -> list[list[str]]:
    """A printed table as the words of each line, ages masked: what both tools print must agree
    cell for cell; padding differs (cnet pads cells to 10)."""
    return [["<age>" if _AGE.match(word) else word for word in line.split()] for line in output.strip().splitlines()]


def _api_resources(output: str) -> dict[str, list[str]]:
    """`kubectl api-resources` as name -> the line's words after the name."""
    return {line.split()[0]: line.split()[1:] for line in output.strip().splitlines()[1:]}


async def test_api_resources_lists_every_kind_with_short_names(kubectl: Kubectl, kubectl_editor: Kubectl) -> None:
    for run in (kubectl, kubectl_editor):  # discovery needs no role, as on kube-apiserver
        result = await run("api-resources")
        assert result.returncode == 0, result.stderr
        listed = _api_resources(result.stdout)
        for info in all_kinds():
            words = listed[info.plural]
            assert words[-1] == info.kind and words[-3] == info.api_version
            assert words[-2] == str(info.namespaced).lower()
            if info.short_names:
                assert words[0] == ",".join(info.short_names)
    in_category = await kubectl("api-resources", "--categories", "clusternet", "-o", "name")
    assert sorted(in_category.stdout.split()) == sorted(f"{i.plural}.{i.group}" for i in all_kinds())
    logged = await kubectl("api-resources", "-v=6")  # aggregated discovery: two requests tell kubectl everything
    requested = re.findall(r'url="https://[^/]+(/[^?"]*)', logged.stderr)
    assert sorted(requested) == ["/api", "/apis"], requested
    verbs = await kubectl("api-resources", "--api-group", "apps.clusternet.io", "-o", "wide")
    assert "create,delete,get,list,patch,update,watch" in verbs.stdout


async def test_explain_prints_clusternets_descriptions(kubectl: Kubectl) -> None:
    result = await kubectl("explain", "subscription.spec.feeds")
    assert result.returncode == 0, result.stderr
    assert "KIND:       Subscription" in result.stdout
    assert "FIELD: feeds <[]Object>" in result.stdout
    assert "Name of the target resource." in result.stdout
    assert "Namespace of the target resource." in result.stdout
    for field, description in (  # kubectl wraps the text: compared word by word
        ("subs.spec.schedulingStrategy", "the Subscription will be handled with specified SchedulingStrategy."),
        ("managedcluster.spec.syncMode", "SyncMode decides how to sync resources from parent cluster to child"),
    ):
        explained = await kubectl("explain", field)
        assert explained.returncode == 0, explained.stderr
        assert description in " ".join(explained.stdout.split()), field
    meta = await kubectl("explain", "subscription.metadata.labels")
    assert meta.returncode == 0 and "FIELD: labels <map[string]string>" in meta.stdout
    assert "Map of string keys and values that can be used to organize" in " ".join(meta.stdout.split())


async def test_get_prints_what_cnet_get_prints(kubectl: Kubectl, served_hub: ServedHub, unique_ns: str) -> None:
    cluster_id = str(uuid.uuid4())
    cluster = {
        "apiVersion": "clusters.clusternet.io/v1beta1",
        "kind": "ManagedCluster",
        "metadata": {"name": "child", "namespace": unique_ns},
        "spec": {"clusterId": cluster_id, "syncMode": "Pull", "clusterType": "EdgeCluster"},
    }
    async with served_hub.session() as http:
        for path, body in (
            (subs_path(unique_ns), subscription(unique_ns)),
            (f"/apis/clusters.clusternet.io/v1beta1/namespaces/{unique_ns}/managedclusters", cluster),
        ):
            async with http.post(path, json=body) as resp:
                assert resp.status == 201, await resp.text()
    for args in (
        ["get", "subs", "-n", unique_ns],
        ["get", "subs", "-n", unique_ns, "-o", "wide"],
        ["get", "mcls", "-A"],
        ["get", "mcls", "-A", "-o", "wide"],
        ["get", "subs", "demo", "-n", unique_ns],
    ):
        printed = await kubectl(*args)
        assert printed.returncode == 0, printed.stderr
        cnet = await run_cnet(*served_hub.cnet_args(), *args)
        assert cnet.exit_code == 0, cnet.output
        assert _rows(printed.stdout) == _rows(cnet.output), args
    more = subscription(unique_ns, "zzz", schedulingStrategy="Dividing")  # sorts first by strategy only
    async with served_hub.session() as http, http.post(subs_path(unique_ns), json=more) as resp:
        assert resp.status == 201
    by_strategy = await kubectl("get", "subs", "-n", unique_ns, "--sort-by=.spec.schedulingStrategy", "-o", "name")
    assert by_strategy.stdout.split() == ["subscription.apps.clusternet.io/zzz", "subscription.apps.clusternet.io/demo"]
    sorted_table = await kubectl("get", "subs", "-n", unique_ns, "--sort-by=.spec.schedulingStrategy")
    assert [row[0] for row in _rows(sorted_table.stdout)[1:]] == ["zzz", "demo"], sorted_table.stderr
    clusters = _rows((await kubectl("get", "mcls", "-A")).stdout)
    assert clusters[0] == ["NAMESPACE", "NAME", "CLUSTER", "ID", "SYNC", "MODE", "KUBERNETES", "STATUS", "AGE"]
    assert [unique_ns, "child", cluster_id, "Pull", "<age>"] in clusters


async def test_get_deploy_through_the_shadow_api(
    kubectl: Kubectl, kubectl_editor: Kubectl, served_hub: ServedHub, unique_ns: str
) -> None:
    async with served_hub.session() as http:
        for namespace, name in ((unique_ns, "web"), (EDITOR_NAMESPACE, "web")):
            async with http.put(SHADOW_OBJECTS_PATH, json=deployment(namespace, name)) as resp:
                assert resp.status in (200, 201), await resp.text()
    # kubectl-clusternet's way: a POST to Clusternet's shadow path
    shadow_path = f"/apis/shadow/v1alpha1/namespaces/{unique_ns}/deployments"
    raw = await kubectl("create", "--raw", shadow_path, "-f", "-", input=json.dumps(deployment(unique_ns, "api")))
    assert raw.returncode == 0, raw.stderr
    assert json.loads(raw.stdout)["metadata"]["name"] == "api"
    listed = await kubectl("get", "deploy", "-n", unique_ns)
    assert listed.returncode == 0, listed.stderr
    assert _rows(listed.stdout) == [["NAME", "AGE"], ["api", "<age>"], ["web", "<age>"]]
    one = await kubectl("get", "deployments.shadow", "web", "-n", unique_ns, "-o", "json")
    assert one.returncode == 0, one.stderr
    applied = json.loads(one.stdout)
    assert (applied["apiVersion"], applied["kind"], applied["spec"]["replicas"]) == ("apps/v1", "Deployment", 2)
    assert "deployments.shadow" in (await kubectl("api-resources", "--categories", "all", "-o", "name")).stdout
    # Authorized as Clusternet's shadow path: the editor sees its namespace only.
    mine = await kubectl_editor("get", "deploy", "-n", EDITOR_NAMESPACE)
    assert mine.returncode == 0, mine.stderr
    assert _rows(mine.stdout) == [["NAME", "AGE"], ["web", "<age>"]]
    theirs = await kubectl_editor("get", "deploy", "-n", unique_ns)
    assert theirs.returncode == 1
    assert 'cannot list resource "deployments" in API group "shadow"' in theirs.stderr
    missing = await kubectl("get", "deploy", "nope", "-n", unique_ns)
    assert 'deployments.shadow "nope" not found' in missing.stderr
    deleted = await kubectl("delete", "deploy", "api", "-n", unique_ns)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == f'deployment.shadow "api" deleted from {unique_ns} namespace'
    assert _rows((await kubectl("get", "deploy", "-n", unique_ns)).stdout) == [["NAME", "AGE"], ["web", "<age>"]]


@pytest.mark.parametrize(
    "field", ["subscription.spec.feeds", "subscription.spec.schedulingStrategy", "mcls.spec", "hr.spec.targetNamespace"]
)
async def test_explain_reads_the_same_from_the_hub_and_from_a_parent_with_our_crds(
    kubectl: Kubectl, kube_parent: ControlPlane, field: str
) -> None:
    established = ("wait", "--for", "condition=established", "--timeout=60s", "crd", "--all")
    for args in (("apply", "-k", str(CRDS)), established):
        installed = await kube_parent.kubectl_async(*args)
        assert installed.returncode == 0, installed.stderr
    from_hub, from_parent = await kubectl("explain", field), await kube_parent.kubectl_async("explain", field)
    assert from_parent.returncode == 0, from_parent.stderr
    assert from_hub.stdout == from_parent.stdout

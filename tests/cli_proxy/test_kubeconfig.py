"""`cnet kubeconfig` and `cnet proxy`'s checks against a real hub: contexts per child through the
hub's proxy path, the context's credentials embedded, clear errors for unknown clusters and a
missing kubectl."""

from __future__ import annotations

import asyncio
import base64
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from clusternet_nats.api.proxy import PROXY_PREFIX
from clusternet_nats.cli.main import app
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer
from typer.testing import CliRunner, Result

ID_A = "6f1d3a8e-0000-4000-8000-00000000000a"
ID_B = "6f1d3a8e-0000-4000-8000-00000000000b"


@pytest.fixture(scope="module")
async def hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url) as served:
        yield served


async def cnet(hub: ServedHub, *args: str) -> Result:
    """`cnet` as the hub's admin, in a thread: its asyncio.run must not block the hub's loop."""
    return await asyncio.to_thread(lambda: CliRunner().invoke(app, [*hub.cnet_args(), *args]))


def managed_cluster(namespace: str, name: str, cluster_id: str) -> str:
    return f"""apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{clusterId: {cluster_id}, syncMode: Pull}}
---
"""


@pytest.fixture(scope="module")
async def clusters(hub: ServedHub, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """child-a in one namespace, and `twin` in two (ambiguous by name alone); the namespaces."""
    ns_a, ns_b = "clusternet-kcfga", "clusternet-kcfgb"
    path = tmp_path_factory.mktemp("clusters") / "clusters.yaml"
    path.write_text(
        managed_cluster(ns_a, "child-a", ID_A)
        + managed_cluster(ns_b, "child-b", ID_B)
        + managed_cluster(ns_a, "twin", ID_A[:-1] + "c")
        + managed_cluster(ns_b, "twin", ID_A[:-1] + "d")
    )
    result = await cnet(hub, "apply", "-f", str(path))
    assert result.exit_code == 0, result.output
    return ns_a, ns_b


async def test_one_context_per_child_through_the_proxy_with_the_users_credentials(
    hub: ServedHub, clusters: tuple[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "kubeconfig"
    result = await cnet(hub, "kubeconfig", "child-a", ID_B, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600, "the file holds credentials"
    config = yaml.safe_load(out.read_text())
    servers = {c["name"]: c["cluster"]["server"] for c in config["clusters"]}
    assert servers == {
        "child-a": f"{hub.url}{PROXY_PREFIX}{ID_A}/proxy/direct",
        ID_B: f"{hub.url}{PROXY_PREFIX}{ID_B}/proxy/direct",
    }
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    assert ca == hub.ca_file.read_bytes()
    assert config["users"] == [{"name": "cnet", "user": {"token": hub.admin_token}}]
    contexts = {c["name"]: c["context"] for c in config["contexts"]}
    assert contexts == {"child-a": {"cluster": "child-a", "user": "cnet"}, ID_B: {"cluster": ID_B, "user": "cnet"}}
    assert config["current-context"] == "child-a"
    printed = await cnet(hub, "kubeconfig", f"{clusters[1]}/twin")
    assert printed.exit_code == 0 and yaml.safe_load(printed.output)["clusters"][0]["name"] == "twin"
    both = await cnet(hub, "kubeconfig", f"{clusters[0]}/twin", f"{clusters[1]}/twin", "child-a", "child-a")
    names = [c["name"] for c in yaml.safe_load(both.output)["contexts"]]
    assert names == [f"{clusters[0]}/twin", f"{clusters[1]}/twin", "child-a"], "unique names, each cluster once"


async def test_unknown_and_ambiguous_clusters_are_named(hub: ServedHub, clusters: tuple[str, str]) -> None:
    result = await cnet(hub, "kubeconfig", "child-a", "nowhere", "twin")
    assert result.exit_code == 1
    assert 'managedclusters.clusters.clusternet.io "nowhere" not found' in result.output
    assert f'cluster "twin" is ambiguous ({clusters[0]}/twin, {clusters[1]}/twin)' in result.output
    assert "child-a" not in result.output.replace('"twin"', ""), "the clusters that resolve are not errors"


async def test_proxy_says_when_kubectl_is_missing(
    hub: ServedHub, clusters: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = await cnet(hub, "proxy", "child-a", "--kubectl", str(tmp_path / "kubectl"), "--", "get", "ns")
    assert result.exit_code == 1
    assert f"kubectl {tmp_path / 'kubectl'} does not exist or is not executable" in result.output
    monkeypatch.delenv("CNET_KUBECTL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = await cnet(hub, "proxy", "child-a", "--", "get", "ns")
    assert result.exit_code == 1 and "kubectl not found on PATH" in result.output

"""Clusternet's Helm examples (replication-scheduling: a HelmChart, a Globalization and a
Localization of it, beside nginx) applied with `cnet` to the whole system as processes, two
simulated clusters whose agent renders charts with the real helm (`--helm-binary`). The chart URL
points at a repository the test serves (a `mysql` chart at the versions the examples name), the
Subscription's cluster id and the Localization's namespace at the test's first cluster, as the
examples' comments ask. The HelmChart is Found, every Description reaches Success, and each child
holds the chart's own objects at the version its overrides give: 9.1.8 where the Localization
applies, 9.1.0 (the Globalization's) elsewhere. The OCI example's HelmChart, pointed at an OCI
registry the test runs (plain HTTP, so `plainHTTP: true` is added), is Found too; and the NFD
example (scheduling-with-nfd/day0: a chart beside a Namespace and a NodeFeatureRule) succeeds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from clusternet_nats.agent.backends.sim.persistence import saved_states
from clusternet_nats.testing import compat
from clusternet_nats.testing.charts import ChartRepo, OciRegistry, oci_registry_with
from clusternet_nats.testing.system import System
from clusternet_nats.testing.tools import Tools
from clusternet_nats.testing.waiting import eventually

from tests.e2e.conftest import APPS, CLUSTERS, HubClient, cnet, owned_by

COMPAT = compat.compat_path(compat.EXAMPLES)
EXAMPLES = COMPAT / "replication-scheduling"
VERSIONS = ("9.1.0", "9.1.8", "9.2.0")


@pytest.fixture(scope="module")
def mysql_repo(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChartRepo]:
    repo = ChartRepo(kube_tools.helm, tmp_path_factory.mktemp("mysql-repo"))
    for version in VERSIONS:
        repo.add_chart("mysql", version)
    yield repo.start()
    repo.stop()


@pytest.fixture(scope="module")
def nfd_repo(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChartRepo]:
    repo = ChartRepo(kube_tools.helm, tmp_path_factory.mktemp("nfd-repo"))
    repo.add_chart("node-feature-discovery", "0.11.2")
    yield repo.start()
    repo.stop()


@pytest.fixture(scope="module")
def mysql_oci(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OciRegistry]:
    with oci_registry_with(kube_tools, tmp_path_factory.mktemp("mysql-oci"), {"mysql": ["9.2.0"]}) as registry:
        yield registry


@pytest.fixture(scope="module")
def system(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("helm-system"), sim_clusters=0)
    sut.add_agent("agent-helm", "helm", 2, "", ["--helm-binary", str(kube_tools.helm)])
    sut.start(timeout=90)
    yield sut
    sut.stop()


def child_state(system: System, cluster: str) -> list[dict[str, Any]]:
    state = saved_states(system.workdir / "agent-state").get(cluster)
    return list(state["objects"]) if state else []


def rewritten(path: Path, out: Path, replace: dict[str, str]) -> Path:
    text = path.read_text()
    for old, new in replace.items():
        assert old in text, f"{path.name} no longer holds {old!r}"
        text = text.replace(old, new)
    target = out / path.name
    target.write_text(text)
    return target


def replication_example(out: Path, repo: str, namespace: str, cluster_id: str) -> list[Path]:
    """replication-scheduling's files in apply order, the chart at `repo`, the Localizations in
    `namespace` and the Subscription for `cluster_id` (what the example asks its reader to change)."""
    return [
        rewritten(EXAMPLES / "helm-chart-mysql.yaml", out, {"https://charts.bitnami.com/bitnami": repo}),
        EXAMPLES / "nginx-deployment.yaml",
        EXAMPLES / "nginx-svc.yaml",
        EXAMPLES / "globalization.yaml",
        rewritten(EXAMPLES / "localization.yaml", out, {"clusternet-5l82l": namespace}),
        rewritten(EXAMPLES / "subscription.yaml", out, {"dc91021d-2361-4f6d-a404-7c33b9e01118": cluster_id}),
    ]



async def test_the_helm_examples_reach_success_on_simulated_clusters(
    system: System, hub: HubClient, mysql_repo: ChartRepo, tmp_path: Path
) -> None:
    async def registered() -> list[dict[str, Any]] | None:
        found = await hub.items(f"{CLUSTERS}/managedclusters")
        return sorted(found, key=lambda c: c["metadata"]["name"]) if len(found) == 2 else None

    clusters = await eventually(registered, 60, what="two clusters registered")
    first, second = clusters
    first_ns, first_id = first["metadata"]["namespace"], first["spec"]["clusterId"]

    files = replication_example(tmp_path, mysql_repo.url, first_ns, first_id)
    # both clusters subscribe: the Localization then applies to one of them only
    sub = yaml.safe_load(files[-1].read_text())
    sub["spec"]["subscribers"] = [{"clusterAffinity": {}}]
    files[-1].write_text(yaml.safe_dump(sub))
    for path in files:
        result = cnet(system, "apply", "-f", str(path))
        assert result.returncode == 0, result.stderr + result.stdout

    async def chart_found() -> bool:
        chart = await hub.get(f"{APPS}/namespaces/default/helmcharts/mysql")
        return ((chart or {}).get("status") or {}).get("phase") == "Found"

    await eventually(chart_found, 30, what="HelmChart mysql Found")

    async def all_success() -> list[dict[str, Any]] | None:
        descs = owned_by(await hub.items(f"{APPS}/descriptions"), "app-demo")
        phases = [(d.get("status") or {}).get("phase") for d in descs]
        return descs if len(descs) >= 4 and all(p == "Success" for p in phases) else None

    descs = await eventually(all_success, 90, what="every Description of app-demo Success")
    assert {d["spec"]["deployer"] for d in descs} == {"Helm", "Generic"}

    def chart_objects(cluster: str) -> dict[str, dict[str, Any]] | None:
        found = {
            o["ref"][1]: o["body"]
            for o in child_state(system, cluster)
            if o["ref"][2] == "abc" and o["ref"][1] in ("ConfigMap", "Deployment")
        }
        return found if len(found) == 2 else None

    for cluster, version in ((first, "9.1.8"), (second, "9.1.0")):
        name = cluster["metadata"]["name"]

        def rendered(name: str = name, version: str = version) -> dict[str, dict[str, Any]] | None:
            objects = chart_objects(name)
            return objects if objects and objects["ConfigMap"]["data"]["chartVersion"] == version else None

        objects = await eventually(rendered, 30, what=f"{name}: mysql {version} rendered")
        assert objects is not None
        deployment = objects["Deployment"]
        assert deployment["status"]["readyReplicas"] == deployment["spec"]["replicas"] == 1


async def test_the_oci_example_is_found(system: System, hub: HubClient, mysql_oci: OciRegistry, tmp_path: Path) -> None:
    chart = yaml.safe_load((COMPAT / "oci" / "oci-chart-mysql.yaml").read_text())
    chart["metadata"]["name"] = "mysql-oci"
    chart["spec"]["repo"] = chart["spec"]["repo"].replace("oci://myoci.registry.com:5000", f"oci://{mysql_oci.host}")
    chart["spec"]["plainHTTP"] = True
    (tmp_path / "oci.yaml").write_text(yaml.safe_dump(chart))
    # the registry holds the chart under /charts, the example names /helm-charts: not found first
    result = cnet(system, "apply", "-f", str(tmp_path / "oci.yaml"))
    assert result.returncode == 0, result.stderr + result.stdout

    async def status() -> dict[str, Any] | None:
        found = await hub.get(f"{APPS}/namespaces/default/helmcharts/mysql-oci")
        return ((found or {}).get("status") or {}) or None

    missing = await eventually(status, 30, what="the OCI HelmChart checked")
    assert missing == {
        "phase": "NotFound",
        "reason": f"not found a version matched 9.2.0 for chart oci://{mysql_oci.host}/helm-charts/mysql",
    }
    chart["spec"]["repo"] = mysql_oci.url
    (tmp_path / "oci.yaml").write_text(yaml.safe_dump(chart))
    result = cnet(system, "apply", "-f", str(tmp_path / "oci.yaml"))
    assert result.returncode == 0, result.stderr + result.stdout

    async def found() -> bool:
        return ((await status()) or {}).get("phase") == "Found"

    await eventually(found, 30, what="the OCI HelmChart Found once its repo is right")


async def test_the_nfd_example_succeeds(system: System, hub: HubClient, nfd_repo: ChartRepo, tmp_path: Path) -> None:
    day0 = COMPAT / "scheduling-with-nfd" / "day0"
    nfd_url = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"
    sub = yaml.safe_load((day0 / "subscription.yaml").read_text())
    sub["spec"]["subscribers"] = [{"clusterAffinity": {}}]
    (tmp_path / "subscription.yaml").write_text(yaml.safe_dump(sub))
    files = [
        rewritten(day0 / "helm-chart-nfd.yaml", tmp_path, {nfd_url: nfd_repo.url}),
        day0 / "node-feature-rule.yaml",
        day0 / "globalization.yaml",
        tmp_path / "subscription.yaml",
    ]
    for path in files:
        result = cnet(system, "apply", "-f", str(path))
        assert result.returncode == 0, result.stderr + result.stdout

    async def all_success() -> list[dict[str, Any]] | None:
        descs = owned_by(await hub.items(f"{APPS}/descriptions"), "nfd-all-children")
        phases = [(d.get("status") or {}).get("phase") for d in descs]
        return descs if len(descs) == 4 and all(p == "Success" for p in phases) else None

    await eventually(all_success, 90, what="every Description of nfd-all-children Success")
    for cluster in await hub.items(f"{CLUSTERS}/managedclusters"):
        name = cluster["metadata"]["name"]

        def kinds(name: str = name) -> bool:
            refs = {(kind, ns, obj) for _, kind, ns, obj in (o["ref"] for o in child_state(system, name))}
            nfd = "node-feature-discovery"
            wanted = {("Namespace", "", nfd), ("ConfigMap", nfd, f"{nfd}-greeting"), ("Deployment", nfd, nfd)}
            return wanted <= refs

        await eventually(kinds, 30, what=f"{name}: the chart's objects in node-feature-discovery")

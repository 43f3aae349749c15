"""Clusternet's HelmChart examples all the way to HelmReleases on simulated clusters.

The files of `clusternet-examples/` that use a HelmChart (replication-scheduling, oci,
scheduling-with-nfd/day0), applied with `cnet` to the whole system as processes (two simulated
clusters whose agent renders with the real helm). Each example is kept as it is but for what it
asks its reader to change (cluster id, cluster namespace) and the chart's repository, which points
at one the test serves with a chart of the same name and versions (a public repository is not
reachable here). tests/helm_sim proves the Descriptions succeed and the charts' objects land;
this proves what a user then reads: one HelmRelease per chart and cluster, in the cluster's
namespace, with the merged values, the version the overrides give, the real release's status,
`cnet get hr -A`, the Subscription's completed releases, and the releases gone with the example.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml
from clusternet_nats.testing.charts import ChartRepo, OciRegistry
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually

from tests.e2e.conftest import APPS, CLUSTERS, HubClient, cnet, owned_by
from tests.helm_sim.test_examples_e2e import (
    COMPAT,
    child_state,
    mysql_oci,
    mysql_repo,
    nfd_repo,
    replication_example,
    rewritten,
    system,
)

__all__ = ["mysql_oci", "mysql_repo", "nfd_repo", "system"]

APPS_VERSION = "apps.clusternet.io/v1alpha1"


async def clusters(hub: HubClient) -> list[dict[str, Any]]:
    async def registered() -> list[dict[str, Any]] | None:
        found = await hub.items(f"{CLUSTERS}/managedclusters")
        return sorted(found, key=lambda c: c["metadata"]["name"]) if len(found) == 2 else None

    both = await eventually(registered, 60, what="two clusters registered")
    assert isinstance(both, list)
    return both


def apply(system: System, *paths: Path) -> None:
    for path in paths:
        result = cnet(system, "apply", "-f", str(path))
        assert result.returncode == 0, result.stderr + result.stdout


def delete(system: System, *paths: Path) -> None:
    for path in reversed(paths):
        result = cnet(system, "delete", "-f", str(path))
        assert result.returncode == 0, result.stderr + result.stdout


async def deployed_releases(hub: HubClient, subscription: str, count: int) -> list[dict[str, Any]]:
    """The Subscription's HelmReleases once there are `count`, all deployed."""

    async def ready() -> list[dict[str, Any]] | None:
        found = owned_by(await hub.items(f"{APPS}/helmreleases"), subscription)
        phases = [(r.get("status") or {}).get("phase") for r in found]
        return found if len(found) == count and all(p == "deployed" for p in phases) else None

    releases = await eventually(ready, 90, what=f"{count} deployed HelmRelease(s) of {subscription}")
    assert isinstance(releases, list)
    return releases


def values(release: dict[str, Any]) -> Any:
    """The release's merged Helm values (`spec.overrides`, base64 of JSON on the wire)."""
    return yaml.safe_load(base64.b64decode(release["spec"]["overrides"]))


async def completed(hub: HubClient, subscription: str, releases: int) -> None:
    async def done() -> bool:
        sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/{subscription}")
        status = (sub or {}).get("status") or {}
        return status.get("desiredReleases") == status.get("completedReleases") == releases

    await eventually(done, 60, what=f"{subscription}: {releases} of {releases} releases completed")


async def gone(hub: HubClient, subscription: str) -> None:
    async def none_left() -> bool:
        return not owned_by(await hub.items(f"{APPS}/helmreleases"), subscription)

    await eventually(none_left, 60, what=f"every HelmRelease of {subscription} deleted")


async def test_the_replication_example_gives_its_cluster_one_release_with_the_merged_overrides(
    system: System, hub: HubClient, mysql_repo: ChartRepo, tmp_path: Path
) -> None:
    first, second = await clusters(hub)
    first_ns, first_id = first["metadata"]["namespace"], first["spec"]["clusterId"]
    files = replication_example(tmp_path, mysql_repo.url, first_ns, first_id)
    apply(system, *files)

    (release,) = await deployed_releases(hub, "app-demo", 1)
    await completed(hub, "app-demo", 1)
    meta, spec = release["metadata"], release["spec"]
    # Clusternet's name and place: <description>-<chart namespace>-<chart name>, the cluster's namespace
    assert meta["namespace"] == first_ns and meta["name"].endswith("-helm-default-mysql")
    assert (spec["repo"], spec["chart"], spec["targetNamespace"]) == (mysql_repo.url, "mysql", "abc")
    assert spec["version"] == "9.1.8"  # the Localization's overrideChart wins over the Globalization's 9.1.0
    assert values(release) == {
        "commonLabels": {"clusternet.io/override-by": "clusternet-hub", "some-label": "some-value"},
        "primary": {"persistence": {"enabled": False}},
        "image": {"tag": "8.0.26-debian-10-r39"},
        "auth": {"database": f"database_for_{first_ns}"},
    }
    assert release["status"]["version"] >= 1
    second_ns = second["metadata"]["namespace"]
    assert not [r for r in await hub.items(f"{APPS}/helmreleases") if r["metadata"]["namespace"] == second_ns]

    table = cnet(system, "get", "hr", "-A")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:2] == ["NAMESPACE", "NAME"]
    assert any(row.split()[:2] == [first_ns, meta["name"]] for row in rows), table.stdout

    delete(system, *files)
    await gone(hub, "app-demo")

    def uninstalled() -> bool:
        return not [o for o in child_state(system, first["metadata"]["name"]) if o["ref"][2] == "abc"]

    await eventually(uninstalled, 60, what="the chart's objects removed from the cluster")


async def test_the_oci_example_is_released_on_every_subscribed_cluster(
    system: System, hub: HubClient, mysql_oci: OciRegistry, tmp_path: Path
) -> None:
    await clusters(hub)
    chart = (COMPAT / "oci" / "oci-chart-mysql.yaml").read_text()
    chart = chart.replace("oci://myoci.registry.com:5000/helm-charts", mysql_oci.url)
    # the test's registry speaks plain HTTP; the example's is TLS
    (tmp_path / "oci-chart-mysql.yaml").write_text(chart + "  plainHTTP: true\n")
    subscription = {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "oci-demo", "namespace": "default"},
        "spec": {
            "subscribers": [{"clusterAffinity": {}}],
            "feeds": [{"apiVersion": APPS_VERSION, "kind": "HelmChart", "name": "mysql", "namespace": "default"}],
        },
    }
    (tmp_path / "subscription.yaml").write_text(yaml.safe_dump(subscription))
    files = [tmp_path / "oci-chart-mysql.yaml", tmp_path / "subscription.yaml"]
    apply(system, *files)

    releases = await deployed_releases(hub, "oci-demo", 2)
    await completed(hub, "oci-demo", 2)
    assert {(r["spec"]["repo"], r["spec"]["version"], r["spec"]["targetNamespace"]) for r in releases} == {
        (mysql_oci.url, "9.2.0", "abc")
    }
    assert all(r["spec"].get("plainHTTP") is True for r in releases)
    delete(system, *files)
    await gone(hub, "oci-demo")


async def test_the_nfd_example_releases_the_chart_with_the_globalization_values(
    system: System, hub: HubClient, nfd_repo: ChartRepo, tmp_path: Path
) -> None:
    _, second = await clusters(hub)
    day0 = COMPAT / "scheduling-with-nfd" / "day0"
    nfd_url = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"
    files = [
        rewritten(day0 / "helm-chart-nfd.yaml", tmp_path, {nfd_url: nfd_repo.url}),
        day0 / "node-feature-rule.yaml",
        day0 / "globalization.yaml",
        rewritten(
            day0 / "subscription.yaml", tmp_path, {"d1b34d4c-9deb-4b3b-949d-5454eb35b929": second["spec"]["clusterId"]}
        ),
    ]
    apply(system, *files)
    (release,) = await deployed_releases(hub, "nfd-all-children", 1)
    await completed(hub, "nfd-all-children", 1)
    assert release["metadata"]["namespace"] == second["metadata"]["namespace"]
    assert (release["spec"]["chart"], release["spec"]["version"]) == ("node-feature-discovery", "0.11.2")
    assert release["spec"]["targetNamespace"] == "node-feature-discovery"
    assert values(release) == {"master": {"extraLabelNs": ["node.clusternet.io"]}}
    delete(system, *files)
    await gone(hub, "nfd-all-children")

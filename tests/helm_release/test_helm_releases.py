"""HelmRelease objects beside Helm Descriptions: made by the deployer in each cluster's namespace
with the merged values, the chart's options and Clusternet's labels, their status copied from what
the agent reports in the Description's status, deleted when the cluster or the Subscription goes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import (
    ChartReference,
    DescriptionStatus,
    HelmChart,
    HelmRelease,
    HelmReleaseStatus,
    Localization,
    Subscription,
    SubscriptionStatus,
)
from clusternet_nats.cli.main import app
from clusternet_nats.domain.helmreleases import chart_status, values_of
from clusternet_nats.domain.names import short_hash
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from typer.testing import CliRunner

from tests.deployer.test_deployer import Upstream


async def test_helm_descriptions_have_helmreleases_with_values_options_and_the_reported_status(
    nats_server: NatsServer, hub: Upstream, deployer: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CNET_CONFIG", str(tmp_path / "cnet-config"))
    ns = hub.ns
    cluster_a, cluster_b = await hub.cluster("a"), await hub.cluster("b")
    chart = HelmChart.new(
        "mysql",
        ns,
        spec={
            "repo": "https://charts.example.com",
            "chart": "mysql",
            "version": "9.2.0",
            "targetNamespace": "db",
            "timeoutSeconds": 120,
            "wait": True,
            "upgradeAtomic": True,
            "skipCRDs": True,
        },
    )
    await hub.create(chart)
    feed = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart", "namespace": ns, "name": "mysql"}
    await hub.create(
        Localization.new(
            "mysql-values",
            cluster_a.namespace,
            spec={
                "feed": feed,
                "overrides": [
                    {"name": "tag", "type": "Helm", "value": "image:\n  tag: 8.0.26"},
                    {"name": "chart", "type": "Helm", "overrideChart": True, "value": "spec:\n  version: 9.3.0"},
                ],
            },
        )
    )
    sub: Subscription = await hub.create(
        Subscription.new("db", ns, spec={"subscribers": [{"clusterAffinity": {}}], "feeds": [feed]})
    )
    binding_revision = await hub.bind(sub, [cluster_a, cluster_b])
    base = f"db-{short_hash(ns, 'db')}"
    name = f"{base}-helm-{ns}-mysql"

    async def releases() -> list[HelmRelease]:
        found = [await hub.get("HelmRelease", c.namespace, name) for c in (cluster_a, cluster_b)]
        return found if all(found) else []

    hr_a, hr_b = await eventually(releases, timeout=20, what="a HelmRelease in both clusters' namespaces")
    desc_a = await hub.get("Description", cluster_a.namespace, f"{base}-helm")
    for hr in (hr_a, hr_b):
        assert hr.spec.release_name == "mysql" and hr.spec.target_namespace == "db"
        options = (hr.spec.timeout_seconds, hr.spec.wait, hr.spec.upgrade_atomic, hr.spec.skip_crds)
        assert options == (120, True, True, True)
        assert hr.labels[known.CONFIG_KIND] == "Description"
        assert hr.labels[known.CONFIG_NAME] == f"{base}-helm"
        assert hr.labels[known.SUBS_UID] == sub.metadata.uid
        assert hr.labels[known.CREATED_BY] == known.DEPLOYER
        assert [(o.kind, o.name) for o in hr.metadata.owner_references or []] == [("Description", f"{base}-helm")]
    assert values_of(hr_a) == {"image": {"tag": "8.0.26"}} and hr_a.spec.version == "9.3.0"
    assert values_of(hr_b) == {} and hr_b.spec.version == "9.2.0"
    assert hr_a.labels[known.CONFIG_UID] == desc_a.metadata.uid

    # The agents report each chart's release in their Description's status.
    statuses = StatusStore(hub.js, "descriptions-status", DescriptionStatus)
    release = HelmReleaseStatus(phase="deployed", version=1, notes="mysql is up", description="Install complete")
    ref = ChartReference(name="mysql", namespace=ns)
    for cluster in (cluster_a, cluster_b):
        reported = DescriptionStatus(phase="Success", manifest_statuses=[chart_status(ref, release)])
        await statuses.put(object_key(cluster.namespace, f"{base}-helm"), reported, 0)
    hr_statuses = StatusStore(hub.js, "helmreleases-status", HelmReleaseStatus)

    async def reported() -> bool:
        found = [await hr_statuses.get(object_key(c.namespace, name)) for c in (cluster_a, cluster_b)]
        return all(f is not None and f.value == release for f in found)

    await eventually(reported, timeout=20, what="HelmRelease status copied from the Descriptions' status")

    # `cnet get hr -A` shows them with Clusternet's columns (its CRD's additionalPrinterColumns).
    async with running_hub(nats_server.url) as served:
        args = [*served.cnet_args(), "get", "hr", "-A"]
        result = await asyncio.to_thread(lambda: CliRunner().invoke(app, args))
    assert result.exit_code == 0, result.output
    # the in-process hub's log lines may land in the captured stdout too: read from the table's header
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("NAMESPACE"))
    assert lines[header].split() == ["NAMESPACE", "NAME", "CHART", "VERSION", "REPO", "STATUS", "AGE"]
    rows = {tuple(line.split()[:6]) for line in lines[header + 1 :]}
    repo = "https://charts.example.com"
    assert (cluster_a.namespace, name, "mysql", "9.3.0", repo, "deployed") in rows
    assert (cluster_b.namespace, name, "mysql", "9.2.0", repo, "deployed") in rows
    sub_statuses = StatusStore(hub.js, "subscriptions-status", SubscriptionStatus)

    async def aggregated() -> SubscriptionStatus | None:
        found = await sub_statuses.get(object_key(ns, "db"))
        return found.value if found and found.value.completed_releases == 2 else None

    status = await eventually(aggregated, timeout=20, what="completedReleases 2")
    assert status is not None and status.aggregated_statuses is not None
    summary = status.aggregated_statuses[0].feed_status_summary
    assert status.aggregated_statuses[0].kind == "HelmChart" and summary is not None and summary.available is True

    # Cluster b leaves the binding: its HelmRelease goes with its Description.
    await hub.bind(sub, [cluster_a], revision=binding_revision)

    async def unbound() -> bool:
        return await hub.get("HelmRelease", cluster_b.namespace, name) is None

    await eventually(unbound, timeout=20, what="cluster b's HelmRelease deleted")
    assert await hr_statuses.get(object_key(cluster_b.namespace, name)) is None
    assert await hub.get("HelmRelease", cluster_a.namespace, name) is not None

    # The Subscription goes: the orphan sweep collects the rest.
    await hub.store("Subscription").delete(ns, "db")

    async def collected() -> bool:
        return await hub.get("HelmRelease", cluster_a.namespace, name) is None

    await eventually(collected, timeout=20, what="cluster a's HelmRelease collected")

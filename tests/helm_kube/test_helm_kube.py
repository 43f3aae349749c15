"""Helm Descriptions installed for real by the kube backend: the `helm` binary, the test's own chart
sources (testing.charts: `greeter` built by `helm package`, served as a classic repository and
pushed to an OCI registry), two real child control planes with different values each.

The control planes have no kubelet, so pods never run: releases use `wait: false` (Helm judges
them by what the API server accepted), except where a wait that cannot succeed is the point (an
atomic upgrade that times out and is rolled back).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import pytest
from clusternet_nats.agent.applier import DescriptionApplier
from clusternet_nats.agent.backends.kube import KubeCluster
from clusternet_nats.agent.service import Agent, AgentOptions, Backend
from clusternet_nats.api.apps import (
    ChartReference,
    DeployerType,
    Description,
    DescriptionPhase,
    DescriptionSpec,
    HelmChart,
    HelmOptions,
    HelmReleaseStatus,
    Localization,
    Subscription,
)
from clusternet_nats.domain.names import short_hash
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.charts import GREETER, ChartRepo, OciRegistry
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tools import Tools, run_tool
from clusternet_nats.testing.waiting import eventually

from tests.deployer.test_deployer import Upstream


def helm_description(chart: HelmChart, values: dict[str, Any]) -> Description:
    """A Helm Description as the deployer renders it for one cluster (values already merged)."""
    return Description.new(
        "app-helm",
        "clusternet-" + uuid.uuid4().hex[:6],
        spec=DescriptionSpec(
            deployer=DeployerType.HELM,
            charts=[ChartReference(name=chart.name, namespace=chart.namespace)],
            chart_raw=[chart.model_dump_json(by_alias=True, exclude_none=True).encode()],
            raw=[json.dumps(values).encode()],
        ),
    )


async def _release(plane: ControlPlane, name: str, namespace: str) -> dict[str, Any] | None:
    done = await run_tool(
        plane.tools.helm, "status", name, "-n", namespace, "-o", "json", "--kubeconfig", plane.kubeconfig
    )
    if done.returncode != 0:
        assert "not found" in done.stderr, done.stderr
        return None
    found: dict[str, Any] = json.loads(done.stdout)
    return found


async def _greeting(plane: ControlPlane, release: str, namespace: str) -> dict[str, str] | None:
    done = await plane.kubectl_async("get", "configmap", f"{release}-greeting", "-n", namespace, "-o", "json")
    if done.returncode != 0:
        assert "NotFound" in done.stderr, done.stderr
        return None
    data: dict[str, str] = json.loads(done.stdout)["data"]
    return data


async def test_releases_install_with_each_clusters_values_upgrade_and_uninstall(
    kube_children: list[ControlPlane], kube_tools: Tools, chart_repo: ChartRepo
) -> None:
    suffix = uuid.uuid4().hex[:6]
    name, target = f"greeter-{suffix}", f"apps-{suffix}"
    chart = HelmChart.new(
        name, "default", spec=HelmOptions(repo=chart_repo.url, chart=GREETER, version="0.1.0", target_namespace=target)
    )
    backends = [KubeCluster(plane.kubeconfig, helm=kube_tools.helm) for plane in kube_children]
    appliers = [DescriptionApplier(backend) for backend in backends]
    for backend in backends:
        await backend.start()
    try:
        greetings = ["hello from child-1", "hello from child-2"]
        descs = [helm_description(chart, {"greeting": g}) for g in greetings]
        for applier, desc, greeting in zip(appliers, descs, greetings, strict=True):
            status = await applier.deploy(desc.namespaced_name(), desc)
            assert status.phase is DescriptionPhase.SUCCESS, status.reason
            # the Description's status reports the release, as the deployer copies it to the HelmRelease
            [reported] = status.manifest_statuses or []
            assert (reported.kind, reported.namespace, reported.name) == ("HelmChart", "default", name)
            observed = reported.observed_status or {}
            assert (observed["phase"], observed["version"]) == ("deployed", 1)
            assert observed["notes"].strip() == f"greeter 0.1.0 says {greeting}"
        for plane, greeting in zip(kube_children, greetings, strict=True):
            assert await _greeting(plane, name, target) == {"greeting": greeting, "chartVersion": "0.1.0"}
            release = await _release(plane, name, target)
            assert release is not None and release["version"] == 1 and release["info"]["status"] == "deployed"
            assert release["info"]["notes"].strip() == f"greeter 0.1.0 says {greeting}"

        # the same Description again: nothing to do, no new revision
        status = await appliers[0].deploy(descs[0].namespaced_name(), descs[0])
        assert status.phase is DescriptionPhase.SUCCESS, status.reason
        release = await _release(kube_children[0], name, target)
        assert release is not None and release["version"] == 1

        # other values on child-1, another chart version on child-2
        changed = helm_description(chart, {"greeting": "bonjour"})
        changed.metadata = descs[0].metadata
        status = await appliers[0].deploy(descs[0].namespaced_name(), changed)
        assert status.phase is DescriptionPhase.SUCCESS, status.reason
        newer = chart.model_copy(deep=True)
        newer.spec.version = "0.2.0"
        upgraded = helm_description(newer, {"greeting": greetings[1]})
        upgraded.metadata = descs[1].metadata
        status = await appliers[1].deploy(descs[1].namespaced_name(), upgraded)
        assert status.phase is DescriptionPhase.SUCCESS, status.reason
        assert await _greeting(kube_children[0], name, target) == {"greeting": "bonjour", "chartVersion": "0.1.0"}
        assert await _greeting(kube_children[1], name, target) == {"greeting": greetings[1], "chartVersion": "0.2.0"}
        for plane in kube_children:
            release = await _release(plane, name, target)
            assert release is not None and release["version"] == 2 and release["info"]["status"] == "deployed"

        # history is kept to Clusternet's 5 revisions
        for n in range(5):
            more = helm_description(chart, {"greeting": f"hello #{n}"})
            more.metadata = descs[0].metadata
            status = await appliers[0].deploy(descs[0].namespaced_name(), more)
            assert status.phase is DescriptionPhase.SUCCESS, status.reason
        kubeconfig = kube_children[0].kubeconfig
        done = await run_tool(kube_tools.helm, "history", name, "-n", target, "-o", "json", "--kubeconfig", kubeconfig)
        assert [entry["revision"] for entry in json.loads(done.stdout)] == [3, 4, 5, 6, 7]

        # the Description goes (the chart left the Subscription, or the cluster the binding)
        for applier, desc, plane in zip(appliers, descs, kube_children, strict=True):
            gone = await applier.remove(desc.namespaced_name())
            assert [(ref.kind, ref.namespace, ref.name) for ref in gone] == [("Release", target, name)]
            assert await _release(plane, name, target) is None
            assert await _greeting(plane, name, target) is None
            assert desc.namespaced_name() not in await backends[0].owners()
    finally:
        for backend in backends:
            await backend.close()


async def test_a_subscription_installs_with_each_clusters_localization_upgrades_and_uninstalls(
    nats_server: NatsServer,
    hub: Upstream,
    deployer: None,
    kube_children: list[ControlPlane],
    kube_tools: Tools,
    chart_repo: ChartRepo,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hub objects to releases: deployer (Descriptions, HelmReleases), two kube agents (helm on PATH)."""
    monkeypatch.setenv("PATH", f"{kube_tools.helm.parent}:{os.environ['PATH']}")
    ns = hub.ns
    names = [f"one-{ns}", f"two-{ns}"]
    for name in names:
        spec = {"repo": chart_repo.url, "chart": GREETER, "version": "0.1.0", "targetNamespace": ns}
        await hub.create(HelmChart.new(name, ns, spec=spec))
    feeds = [
        {"apiVersion": HelmChart.api_version_string(), "kind": "HelmChart", "namespace": ns, "name": name}
        for name in names
    ]
    agents = [
        Agent(AgentOptions(cluster_name=f"helm-{i}-{ns}"[:40], backend=Backend.KUBE, kubeconfig=plane.kubeconfig))
        for i, plane in enumerate(kube_children)
    ]
    async with running_service("agent-1", agents[0].build, nats_server.url), running_service(
        "agent-2", agents[1].build, nats_server.url
    ):
        idents = [
            (await eventually(lambda a=a: a.clusters[0] if a.clusters and a.clusters[0].ready else None, 60)).identity
            for a in agents
        ]
        clusters = [
            await eventually(lambda i=i: hub.get("ManagedCluster", i.namespace, i.name), 30, what="ManagedCluster")
            for i in idents
        ]
        localizations = []
        for cluster in clusters:
            override = {"name": "greet", "type": "Helm", "value": f"greeting: hello {cluster.namespace}"}
            spec = {"feed": feeds[0], "overrides": [override], "overridePolicy": "ApplyNow"}
            loc = Localization.new("greet", cluster.namespace, spec=spec)
            localizations.append(await hub.create(loc))
        sub: Subscription = await hub.create(
            Subscription.new("greeters", ns, spec={"subscribers": [{"clusterAffinity": {}}], "feeds": feeds})
        )
        revision = await hub.bind(sub, clusters)

        async def greetings(release: str) -> list[dict[str, str] | None]:
            return [await _greeting(plane, release, ns) for plane in kube_children]

        async def installed() -> bool:
            first, second = await greetings(names[0]), await greetings(names[1])
            localized = [{"greeting": f"hello {c.namespace}", "chartVersion": "0.1.0"} for c in clusters]
            return first == localized and second == [{"greeting": "hello", "chartVersion": "0.1.0"}] * 2

        await eventually(installed, 90, what="chart one with each cluster's Localization, chart two as it is")
        hr_statuses = StatusStore(hub.js, "helmreleases-status", HelmReleaseStatus)
        base = f"greeters-{short_hash(ns, 'greeters')}"

        async def hr_deployed() -> bool:
            keys = [object_key(c.namespace, f"{base}-helm-{ns}-{names[0]}") for c in clusters]
            found = [await hr_statuses.get(key) for key in keys]
            return all(f is not None and f.value.phase == "deployed" and f.value.version == 1 for f in found)

        await eventually(hr_deployed, 60, what="HelmRelease status: deployed, revision 1")

        # A changed Localization upgrades cluster 1's release only.
        loc = localizations[0]
        loc.spec.overrides[0].value = "greeting: bonjour"
        await hub.store("Localization").update(loc)

        async def upgraded() -> bool:
            return (await greetings(names[0]))[0] == {"greeting": "bonjour", "chartVersion": "0.1.0"}

        await eventually(upgraded, 90, what="cluster 1's release upgraded")
        first, second = [await _release(plane, names[0], ns) for plane in kube_children]
        assert first is not None and second is not None and (first["version"], second["version"]) == (2, 1)

        # Chart two leaves the Subscription: uninstalled from both clusters, chart one stays.
        sub = await hub.get("Subscription", ns, "greeters")
        sub.spec.feeds = sub.spec.feeds[:1]
        sub = await hub.store("Subscription").update(sub)
        await hub.bind(sub, clusters, revision=revision)

        async def two_gone() -> bool:
            return [await _release(plane, names[1], ns) for plane in kube_children] == [None, None]

        await eventually(two_gone, 90, what="chart two uninstalled")
        assert all(g is not None for g in await greetings(names[0]))

        # The Subscription goes: chart one is uninstalled too.
        await hub.store("Subscription").delete(ns, "greeters")

        async def one_gone() -> bool:
            return [await _release(plane, names[0], ns) for plane in kube_children] == [None, None]

        await eventually(one_gone, 90, what="chart one uninstalled")


async def test_a_failed_atomic_upgrade_is_rolled_back_and_reported(
    kube_children: list[ControlPlane], kube_tools: Tools, chart_repo: ChartRepo
) -> None:
    """With no kubelet a Deployment of 1 replica never becomes ready, so waiting for it times out;
    one of 0 replicas is ready once kube-controller-manager made its ReplicaSet."""
    plane = kube_children[0]
    await plane.start_controller_manager_async()
    suffix = uuid.uuid4().hex[:6]
    name, target = f"greeter-{suffix}", f"apps-{suffix}"
    chart = HelmChart.new(
        name, "default", spec=HelmOptions(repo=chart_repo.url, chart=GREETER, version="0.1.0", target_namespace=target)
    )
    backend = KubeCluster(plane.kubeconfig, helm=kube_tools.helm)
    await backend.start()
    applier = DescriptionApplier(backend)
    try:
        desc = helm_description(chart, {"greeting": "first", "replicas": 0})
        status = await applier.deploy(desc.namespaced_name(), desc)
        assert status.phase is DescriptionPhase.SUCCESS, status.reason

        waiting = chart.model_copy(deep=True)
        waiting.spec.wait, waiting.spec.upgrade_atomic, waiting.spec.timeout_seconds = True, True, 3
        failing = helm_description(waiting, {"greeting": "second", "replicas": 1})
        failing.metadata = desc.metadata
        status = await applier.deploy(desc.namespaced_name(), failing)
        assert status.phase is DescriptionPhase.FAILURE
        assert status.reason is not None and f"HelmRelease {desc.namespace}/app-helm-default-{name}" in status.reason
        assert "rolled back" in status.reason or "rollback" in status.reason.lower()
        [reported] = status.manifest_statuses or []
        observed = reported.observed_status or {}
        assert observed["phase"] == "failed" and "UPGRADE FAILED" in observed["notes"]

        release = await _release(plane, name, target)
        assert release is not None and release["info"]["status"] == "deployed"
        assert release["version"] == 3  # 1 installed, 2 failed, 3 the rollback to 1
        assert await _greeting(plane, name, target) == {"greeting": "first", "chartVersion": "0.1.0"}
    finally:
        await applier.remove(desc.namespaced_name())
        await backend.close()


async def test_a_chart_from_an_oci_registry_is_installed_and_uninstalled(
    kube_children: list[ControlPlane], kube_tools: Tools, oci_registry: OciRegistry
) -> None:
    plane = kube_children[1]
    suffix = uuid.uuid4().hex[:6]
    name, target = f"greeter-{suffix}", f"apps-{suffix}"
    spec = HelmOptions.model_validate(
        {"repo": oci_registry.url, "chart": GREETER, "version": "0.2.0", "targetNamespace": target, "plainHTTP": True}
    )
    backend = KubeCluster(plane.kubeconfig, helm=kube_tools.helm)
    await backend.start()
    applier = DescriptionApplier(backend)
    try:
        desc = helm_description(HelmChart.new(name, "default", spec=spec), {"greeting": "from oci"})
        status = await applier.deploy(desc.namespaced_name(), desc)
        assert status.phase is DescriptionPhase.SUCCESS, status.reason
        assert await _greeting(plane, name, target) == {"greeting": "from oci", "chartVersion": "0.2.0"}
        await applier.remove(desc.namespaced_name())
        assert await _release(plane, name, target) is None
    finally:
        await backend.close()

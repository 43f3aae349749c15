"""Helm Descriptions installed for real by the kube backend: the `helm` binary, a chart repository
the test serves (a chart built by `helm package`, a static index.yaml), two real child control
planes with different values each.

The control planes have no kubelet, so pods never run: releases use `wait: false` (Helm judges
them by what the API server accepted), except where a wait that cannot succeed is the point (an
atomic upgrade that times out and is rolled back).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from clusternet_nats.agent.applier import DescriptionApplier
from clusternet_nats.agent.backends.kube import KubeCluster
from clusternet_nats.api.apps import (
    ChartReference,
    DeployerType,
    Description,
    DescriptionPhase,
    DescriptionSpec,
    HelmChart,
    HelmOptions,
)
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.tools import Tools, run_tool

CHART = "greeter"

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting | quote }}
  chartVersion: {{ .Chart.Version | quote }}
"""

DEPLOYMENT = """{{- if .Values.deployment }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: greeter}
  template:
    metadata:
      labels: {app: greeter}
    spec:
      containers: [{name: web, image: nginx:1.27}]
{{- end }}
"""


async def _package(tools: Tools, workdir: Path, version: str, out: Path) -> None:
    chart = workdir / f"{CHART}-{version}"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {CHART}\nversion: {version}\n")
    (chart / "values.yaml").write_text("greeting: hello\ndeployment: false\n")
    (chart / "templates" / "configmap.yaml").write_text(CONFIGMAP)
    (chart / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    (chart / "templates" / "NOTES.txt").write_text("greeter {{ .Chart.Version }} says {{ .Values.greeting }}\n")
    done = await run_tool(tools.helm, "package", chart, "--destination", out)
    assert done.returncode == 0, done.stderr


@pytest.fixture
async def chart_repo(kube_tools: Tools, tmp_path: Path) -> AsyncIterator[str]:
    """A classic Helm repository (index.yaml + packages) with greeter 0.1.0 and 0.2.0."""
    served = tmp_path / "repo"
    served.mkdir()
    for version in ("0.1.0", "0.2.0"):
        await _package(kube_tools, tmp_path / "src", version, served)
    app = web.Application()
    app.router.add_static("/", served)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    done = await run_tool(kube_tools.helm, "repo", "index", served, "--url", url)
    assert done.returncode == 0, done.stderr
    yield url
    await runner.cleanup()


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
    kube_children: list[ControlPlane], kube_tools: Tools, chart_repo: str
) -> None:
    suffix = uuid.uuid4().hex[:6]
    name, target = f"greeter-{suffix}", f"apps-{suffix}"
    chart = HelmChart.new(
        name, "default", spec=HelmOptions(repo=chart_repo, chart=CHART, version="0.1.0", target_namespace=target)
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


async def test_a_failed_atomic_upgrade_is_rolled_back_and_reported(
    kube_children: list[ControlPlane], kube_tools: Tools, chart_repo: str
) -> None:
    """With no kubelet a Deployment never becomes ready: waiting for it must time out."""
    plane = kube_children[0]
    suffix = uuid.uuid4().hex[:6]
    name, target = f"greeter-{suffix}", f"apps-{suffix}"
    chart = HelmChart.new(
        name, "default", spec=HelmOptions(repo=chart_repo, chart=CHART, version="0.1.0", target_namespace=target)
    )
    backend = KubeCluster(plane.kubeconfig, helm=kube_tools.helm)
    await backend.start()
    applier = DescriptionApplier(backend)
    try:
        desc = helm_description(chart, {"greeting": "first"})
        status = await applier.deploy(desc.namespaced_name(), desc)
        assert status.phase is DescriptionPhase.SUCCESS, status.reason

        waiting = chart.model_copy(deep=True)
        waiting.spec.wait, waiting.spec.upgrade_atomic, waiting.spec.timeout_seconds = True, True, 3
        failing = helm_description(waiting, {"greeting": "second", "deployment": True})
        failing.metadata = desc.metadata
        status = await applier.deploy(desc.namespaced_name(), failing)
        assert status.phase is DescriptionPhase.FAILURE
        assert status.reason is not None and f"HelmRelease {desc.namespace}/app-helm-default-{name}" in status.reason
        assert "rolled back" in status.reason or "rollback" in status.reason.lower()

        release = await _release(plane, name, target)
        assert release is not None and release["info"]["status"] == "deployed"
        assert release["version"] == 3  # 1 installed, 2 failed, 3 the rollback to 1
        assert await _greeting(plane, name, target) == {"greeting": "first", "chartVersion": "0.1.0"}
        done = await plane.kubectl_async("get", "deployment", name, "-n", target)
        assert done.returncode != 0 and "NotFound" in done.stderr
    finally:
        await applier.remove(desc.namespaced_name())
        await backend.close()

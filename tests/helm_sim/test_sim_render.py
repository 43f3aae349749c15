"""Simulated clusters render charts for real: `helm template` of a chart the test serves (a
classic repository and an OCI registry) with each release's values, the objects stored in the
simulated cluster so the Deployment's replicas are the chart's; upgrades replace what an earlier
revision rendered; prune takes a release's objects with it; and one Renderer shared by many
clusters pulls each archive once and renders each (values, release) once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.backends.sim.cluster import RELEASE_API_VERSION, RELEASE_LABEL
from clusternet_nats.api.apps import HelmRelease, HelmReleaseSpec
from clusternet_nats.helm.render import Renderer
from clusternet_nats.testing.charts import GREETER, ChartRepo, OciRegistry
from clusternet_nats.testing.tools import Tools

OWNER = "cluster-ns.app-helm"
TARGET = "greet"


def release(repo: str, values: dict[str, Any], version: str = "0.1.0", **options: Any) -> HelmRelease:
    spec = HelmReleaseSpec(
        repo=repo, chart=GREETER, version=version, target_namespace=TARGET, overrides=json.dumps(values).encode(),
        **options,
    )
    return HelmRelease.new("app-helm-default-greeter", "cluster-ns", spec=spec, metadata=None)


def deployment_ref(name: str = "app-helm-default-greeter") -> ObjectRef:
    return ObjectRef("apps/v1", "Deployment", TARGET, name)


def configmap_ref(name: str = "app-helm-default-greeter") -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", TARGET, f"{name}-greeting")


async def started(name: str, renderer: Renderer) -> SimCluster:
    cluster = SimCluster(name, Sizing(nodes=3, node_cpu="4", node_memory="8Gi"), renderer=renderer)
    await cluster.start()
    return cluster


@pytest.fixture
def renderer(kube_tools: Tools, tmp_path: Path) -> Renderer:
    return Renderer(kube_tools.helm, tmp_path / "helm")


async def test_a_chart_is_rendered_with_its_values_upgraded_and_pruned(
    renderer: Renderer, chart_repo: ChartRepo
) -> None:
    cluster = await started("sim-1", renderer)
    outcome = await cluster.install_releases(OWNER, [release(chart_repo.url, {"replicas": 3, "greeting": "hi"})])
    assert outcome.failures == []
    [release_ref] = outcome.applied
    assert release_ref == ObjectRef(RELEASE_API_VERSION, "Release", TARGET, "app-helm-default-greeter")

    status = await cluster.observed_status(deployment_ref())
    assert status is not None and (status["replicas"], status["readyReplicas"]) == (3, 3)
    config = cluster.objects.get(configmap_ref())
    assert config is not None and config.body["data"] == {"greeting": "hi", "chartVersion": "0.1.0"}
    assert config.body["metadata"]["labels"][RELEASE_LABEL] == f"{TARGET}.app-helm-default-greeter"
    assert (await cluster.facts()).running_pods == 3

    # other values and another chart version: the same objects, changed
    upgraded = await cluster.install_releases(OWNER, [release(chart_repo.url, {"replicas": 2}, version="0.2.0")])
    assert upgraded.failures == []
    status = await cluster.observed_status(deployment_ref())
    assert status is not None and status["readyReplicas"] == 2
    config = cluster.objects.get(configmap_ref())
    assert config is not None and config.body["data"] == {"greeting": "hello", "chartVersion": "0.2.0"}

    # the release kept: its rendered objects stay; the release gone: they go with it
    assert await cluster.prune(OWNER, keep={release_ref}) == []
    assert cluster.objects.get(deployment_ref()) is not None
    pruned = await cluster.prune(OWNER, keep=set())
    assert {release_ref, deployment_ref(), configmap_ref()} <= set(pruned)
    assert cluster.objects.get(deployment_ref()) is None and (await cluster.facts()).running_pods == 0


async def test_a_missing_chart_version_fails_with_helms_reason(renderer: Renderer, chart_repo: ChartRepo) -> None:
    cluster = await started("sim-1", renderer)
    outcome = await cluster.install_releases(OWNER, [release(chart_repo.url, {}, version="9.9.9")])
    assert outcome.applied == []
    [failure] = outcome.failures
    assert 'chart "greeter" version "9.9.9" not found' in failure
    assert cluster.objects.get(deployment_ref()) is None


async def test_an_oci_chart_is_rendered(renderer: Renderer, oci_registry: OciRegistry) -> None:
    cluster = await started("sim-1", renderer)
    outcome = await cluster.install_releases(
        OWNER, [release(oci_registry.url, {"replicas": 4}, version="0.2.0", plain_http=True)]
    )
    assert outcome.failures == []
    status = await cluster.observed_status(deployment_ref())
    assert status is not None and status["readyReplicas"] == 4


async def test_many_clusters_with_the_same_values_cost_one_render(renderer: Renderer, chart_repo: ChartRepo) -> None:
    clusters = [await started(f"sim-{i}", renderer) for i in range(50)]
    same = release(chart_repo.url, {"replicas": 2})
    outcomes = await asyncio.gather(*(c.install_releases(OWNER, [same]) for c in clusters))
    assert all(o.failures == [] for o in outcomes)
    for cluster in clusters:
        status = await cluster.observed_status(deployment_ref())
        assert status is not None and status["readyReplicas"] == 2
    assert (renderer.pulls, renderer.renders) == (1, 1)

    # other values on one cluster: one more render, no more pulls
    await clusters[0].install_releases(OWNER, [release(chart_repo.url, {"replicas": 1})])
    assert (renderer.pulls, renderer.renders) == (1, 2)


async def test_an_unpinned_chart_is_pulled_again_once_its_archive_is_old(
    renderer: Renderer, kube_tools: Tools, tmp_path: Path
) -> None:
    repo = ChartRepo(kube_tools.helm, tmp_path / "repo").start()
    try:
        repo.add_chart(GREETER, "0.1.0")
        cluster = await started("sim-1", renderer)
        latest = release(repo.url, {}, version="")
        assert (await cluster.install_releases(OWNER, [latest])).failures == []
        repo.add_chart(GREETER, "0.3.0")
        await cluster.install_releases(OWNER, [latest])
        assert renderer.pulls == 1  # within the TTL the archive pulled for "latest" is reused

        renderer.unpinned_ttl = 0.0
        assert (await cluster.install_releases(OWNER, [latest])).failures == []
        config = cluster.objects.get(configmap_ref())
        assert renderer.pulls == 2 and config is not None and config.body["data"]["chartVersion"] == "0.3.0"
    finally:
        repo.stop()

"""The agent process against a real NATS: two simulated clusters, Descriptions in, status out."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from clusternet_nats.agent import cluster_agent
from clusternet_nats.agent import service as agent_service
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster
from clusternet_nats.agent.backends.sim.cluster import RELEASE_API_VERSION
from clusternet_nats.agent.cluster_agent import SERVICE as AGENT_SERVICE
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.apps import (
    ChartReference,
    DeployerType,
    Description,
    DescriptionPhase,
    DescriptionSpec,
    DescriptionStatus,
)
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.service import CommonOptions, ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore, ensure_buckets, list_events
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"ports": [{"port": 80}]},
}
OUTAGE = 65.0
"""Seconds NATS is down at the agent's start: past the minute after which the first connection was given up."""
SERVICE_REF = ObjectRef("v1", "Service", "shop", "web")
DEPLOYMENT_REF = ObjectRef("apps/v1", "Deployment", "shop", "web")


def options(**overrides: Any) -> AgentOptions:
    defaults: dict[str, Any] = {
        "cluster_name": f"a{uuid.uuid4().hex[:8]}",
        "sim_clusters": 2,
        "cluster_labels": {"team": "core"},
        "sim_labels_cycle": [{"env": "prod"}, {"env": "staging"}],
    }
    return AgentOptions(**{**defaults, **overrides})


def sim(cluster: ClusterAgent) -> SimCluster:
    assert isinstance(cluster.backend, SimCluster)
    return cluster.backend


def generic(name: str, namespace: str, *objects: dict[str, Any]) -> Description:
    raw = [json.dumps(obj).encode() for obj in objects]
    return Description.new(name, namespace, spec=DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw))


def stores(js: JetStreamContext) -> tuple[ObjectStore[Description], StatusStore[DescriptionStatus]]:
    return ObjectStore(js, by_kind("Description")), StatusStore(js, "descriptions-status", DescriptionStatus)


async def test_each_cluster_registers_its_managed_cluster_with_labels_and_status(
    nats_server: NatsServer, js: JetStreamContext
) -> None:
    agent = Agent(options())
    clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind("ManagedCluster"))
    statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
    async with running_service("agent", agent.build, nats_server.url):
        for cluster, env in zip(agent.clusters, ["prod", "staging"], strict=True):
            ident = cluster.identity
            mcls = await eventually(lambda i=ident: clusters.get(i.namespace, i.name), 10, what="ManagedCluster")
            assert mcls.spec.cluster_id == ident.cluster_id
            assert mcls.spec.cluster_type == "StandardCluster"
            assert mcls.labels["env"] == env and mcls.labels["team"] == "core"
            assert mcls.labels["clusters.clusternet.io/cluster-name"] == ident.name
            key = clusters.key(ident.namespace, ident.name)
            status = await eventually(lambda k=key: statuses.get(k), 10, what="ManagedCluster status")
            assert status.value.conditions is not None
            assert status.value.conditions[0].reason == "ManagedClusterReady"
            assert status.value.capacity == {"cpu": "12", "memory": "24Gi", "pods": "330"}
            assert status.value.node_statistics is not None and status.value.node_statistics.ready_nodes == 3


async def test_a_generic_description_is_applied_reported_pruned_and_removed(
    nats_server: NatsServer, js: JetStreamContext
) -> None:
    agent = Agent(options())
    mine, other = agent.clusters
    descriptions, statuses = stores(js)
    desc = generic("shop-generic", mine.identity.namespace, NAMESPACE, DEPLOYMENT, SERVICE)
    key = descriptions.key_of(desc)

    async def phase_success() -> DescriptionStatus | None:
        found = await statuses.get(key)
        return found.value if found and found.value.phase is DescriptionPhase.SUCCESS else None

    async with running_service("agent", agent.build, nats_server.url):
        watch = await (await js.key_value("descriptions-status")).watch(key, include_history=False)
        created = await descriptions.create(desc)
        status = await eventually(phase_success, 10, what="Description Success")
        assert status.manifest_statuses is not None
        deployment = next(m for m in status.manifest_statuses if m.kind == "Deployment")
        assert deployment.observed_status == {
            "observedGeneration": 1,
            "replicas": 2,
            "updatedReplicas": 2,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "unavailableReplicas": 0,
        }
        phases = [DescriptionStatus.model_validate_json(entry.value or b"{}").phase async for entry in _written(watch)]
        assert phases[0] is DescriptionPhase.PENDING, "recorded before the first apply"
        assert phases[-1] is DescriptionPhase.SUCCESS
        assert await sim(mine).owners() == {key}
        assert await sim(other).owners() == set()
        assert await statuses.bucket.keys(f"{other.identity.namespace}.>") == []
        events = await list_events(js, "Description", desc.namespace, desc.name)
        assert [e.reason for e in events] == ["SuccessfullyDeployed"]

        created.spec.raw = created.spec.raw[:2] if created.spec.raw else []
        await descriptions.update(created)
        await eventually(lambda: sim(mine).objects.get(SERVICE_REF) is None, 10, what="Service pruned")
        assert sim(mine).objects.get(DEPLOYMENT_REF) is not None

        await descriptions.delete(desc.namespace, desc.name)
        await eventually(lambda: sim(mine).objects.get(DEPLOYMENT_REF) is None, 10, what="objects removed")
        await eventually(lambda: _absent(statuses, key), 10, what="status removed")
        assert await sim(mine).owners() == set()


async def _written(watch: KeyValue.KeyWatcher) -> AsyncIterator[KeyValue.Entry]:
    """What the watch saw written so far (every revision, though the bucket keeps one)."""
    while True:
        try:
            entry = await watch.updates(timeout=0.5)
        except nats.errors.TimeoutError:
            return
        if entry is not None and entry.value:
            yield entry


async def _absent(statuses: StatusStore[DescriptionStatus], key: str) -> bool:
    return await statuses.get(key) is None


async def test_a_restarted_agent_keeps_its_objects_and_prunes_descriptions_deleted_meanwhile(
    nats_server: NatsServer, js: JetStreamContext, tmp_path: Path
) -> None:
    opts = options(sim_clusters=1, state_dir=tmp_path)
    descriptions, statuses = stores(js)
    agent = Agent(opts)
    namespace = agent.clusters[0].identity.namespace
    gone = generic("gone-generic", namespace, NAMESPACE, DEPLOYMENT)
    kept = generic("kept-generic", namespace, {**SERVICE, "metadata": {"name": "kept", "namespace": "default"}})
    kept_ref = ObjectRef("v1", "Service", "default", "kept")

    async with running_service("agent", agent.build, nats_server.url):
        for desc in (gone, kept):
            await descriptions.create(desc)
        await eventually(lambda: _both_reported(statuses, gone, kept), 10, what="both Descriptions Success")
        kept_obj = sim(agent.clusters[0]).objects.get(kept_ref)
        assert kept_obj is not None
        kept_uid = kept_obj.body["metadata"]["uid"]

    await descriptions.delete(gone.namespace, gone.name)
    restarted = Agent(opts)
    async with running_service("agent", restarted.build, nats_server.url):
        cluster = sim(restarted.clusters[0])
        await eventually(lambda: cluster.objects.get(DEPLOYMENT_REF) is None, 10, what="orphans pruned")
        assert cluster.objects.get(ObjectRef("v1", "Namespace", "", "shop")) is None
        await eventually(lambda: _absent(statuses, descriptions.key_of(gone)), 10, what="orphan status removed")
        survivor = cluster.objects.get(kept_ref)
        assert survivor is not None and survivor.body["metadata"]["uid"] == kept_uid


async def _both_reported(statuses: StatusStore[DescriptionStatus], *descs: Description) -> bool:
    for desc in descs:
        found = await statuses.get(f"{desc.namespace}.{desc.name}")
        if found is None or found.value.phase is not DescriptionPhase.SUCCESS:
            return False
    return True


def sized(name: str, replicas: int) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}
    spec = {"replicas": replicas, "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def test_capacity_freed_by_one_description_is_reported_in_another(
    nats_server: NatsServer, js: JetStreamContext
) -> None:
    agent = Agent(options(sim_clusters=1))
    namespace = agent.clusters[0].identity.namespace
    descriptions, statuses = stores(js)
    first, second = (
        generic("first-generic", namespace, sized("first", 10)),
        generic("second-generic", namespace, sized("second", 6)),
    )

    async def ready_of_second(expected: int) -> bool:
        found = await statuses.get(descriptions.key_of(second))
        manifests = (found.value.manifest_statuses or []) if found else []
        return any((m.observed_status or {}).get("readyReplicas") == expected for m in manifests)

    async with running_service("agent", agent.build, nats_server.url):
        await descriptions.create(first)
        await eventually(lambda: _both_reported(statuses, first), 10, what="first Success")
        await descriptions.create(second)
        await eventually(lambda: ready_of_second(2), 10, what="second squeezed to 2 ready")
        await descriptions.delete(first.namespace, first.name)
        await eventually(lambda: ready_of_second(6), 10, what="second re-reported with 6 ready")


async def test_a_helm_description_installs_a_simulated_release(nats_server: NatsServer, js: JetStreamContext) -> None:
    agent = Agent(options(sim_clusters=1))
    namespace = agent.clusters[0].identity.namespace
    descriptions, statuses = stores(js)
    chart = {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "HelmChart",
        "metadata": {"name": "mysql", "namespace": "default"},
        "spec": {"repo": "https://charts.example.com", "chart": "mysql", "version": "9.2.0", "targetNamespace": "db"},
    }
    spec = DescriptionSpec(
        deployer=DeployerType.HELM,
        charts=[ChartReference(name="mysql", namespace="default")],
        chart_raw=[json.dumps(chart).encode()],
        raw=[b"{}"],
    )
    desc = Description.new("mysql-helm", namespace, spec=spec)

    async with running_service("agent", agent.build, nats_server.url):
        await descriptions.create(desc)
        await eventually(lambda: _both_reported(statuses, desc), 10, what="Helm Description Success")
        release = await sim(agent.clusters[0]).observed_status(ObjectRef(RELEASE_API_VERSION, "Release", "db", "mysql"))
        assert release == {"phase": "deployed", "version": 1}


async def test_clusters_started_while_nats_is_down_for_over_a_minute_come_up_once_it_is_back() -> None:
    """The first connection used to be given up after 60 s: the cluster's start raised, which
    ended the start of every cluster of its process, and the process stayed up never ready."""
    server = NatsServer()
    cluster = Agent(options(sim_clusters=1)).clusters[0]
    starting = asyncio.create_task(cluster.start(CommonOptions(nats_url=server.url, health_port=-1)))
    try:
        await asyncio.sleep(OUTAGE)  # the outage itself, not a synchronisation: nothing to wait on
        assert not starting.done(), starting.exception()
        server.start()
        nc = await nats.connect(server.url)
        await ensure_buckets(nc.jetstream())
        await nc.close()
        await asyncio.wait_for(starting, 30)
        await eventually(lambda: cluster.ready, 30, what="the cluster registered and listening")
    finally:
        starting.cancel()
        await cluster.stop()
        server.cleanup()


async def test_a_process_starts_its_clusters_a_few_at_a_time(
    nats_server: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the first connection to the first listing: ten thousand consumer creations at once
    queued in nats-server for minutes, and a thousand handshakes outlasted the connect timeout."""
    monkeypatch.setattr(agent_service, "STARTING_AT_ONCE", 3)
    agent = Agent(options(sim_clusters=12))
    at_once, most = 0, 0
    connect, listed = ClusterAgent._connect, ServiceContext.start

    async def connecting(self: ClusterAgent, *args: Any) -> asyncio.Task[None]:
        nonlocal at_once, most
        at_once += 1
        most = max(most, at_once)
        return await connect(self, *args)

    async def listing(self: ServiceContext) -> None:
        nonlocal at_once
        await listed(self)
        if self.name == AGENT_SERVICE:  # a cluster's, not the process's own
            at_once -= 1

    monkeypatch.setattr(ClusterAgent, "_connect", connecting)
    monkeypatch.setattr(ServiceContext, "start", listing)
    async with running_service("agent", agent.build, nats_server.url):
        await eventually(lambda: all(c.ready for c in agent.clusters), 30, what="every cluster ready")
    assert most == 3, f"{most} clusters started at once"


async def test_a_cluster_that_cannot_list_leaves_the_gate_to_the_others(
    nats_server: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One cluster whose hub never lets it list (refused, say) must not hold the rest of its
    process back: it leaves the gate after STARTING_HOLD and goes on trying outside it."""
    monkeypatch.setattr(agent_service, "STARTING_AT_ONCE", 1)
    monkeypatch.setattr(cluster_agent, "STARTING_HOLD", 0.5)
    agent = Agent(options(sim_clusters=3))
    stuck, *others = agent.clusters
    listed = ServiceContext.start

    async def listing(self: ServiceContext) -> None:
        if self is stuck.ctx:
            await asyncio.Event().wait()  # never lists
        await listed(self)

    monkeypatch.setattr(ServiceContext, "start", listing)
    async with running_service("agent", agent.build, nats_server.url):
        await eventually(lambda: all(c.ready for c in others), 30, what="the other clusters ready")
        assert not stuck.ready

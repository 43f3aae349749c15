"""Drift recovery with `--backend kube` against a real kube-apiserver: what kubectl changes or
deletes in the child is put back by the agent, with an Event; fields the agent does not apply
(another manager's replicas, once a Localization removed them) are left alone; nothing loops."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.service import Agent, AgentOptions, Backend
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.js import JetStreamContext

from tests.agent_kube.test_kube_backend import kubectl_json
from tests.drift.helpers import Descriptions, configmap, deployment, namespace, without_replicas
from tests.registration.harness import RegistrationHub, running_agent

SETTLE_SECONDS = 3.0


async def kubectl(plane: ControlPlane, *args: str) -> None:
    result = await plane.kubectl_async(*args)
    assert result.returncode == 0, result.stderr


@pytest.fixture
async def cluster(nats_server: NatsServer, kube_children: list[ControlPlane]) -> AsyncIterator[ClusterAgent]:
    plane = kube_children[0]
    agent = Agent(
        AgentOptions(cluster_name=f"drift-{uuid.uuid4().hex[:8]}", backend=Backend.KUBE, kubeconfig=plane.kubeconfig)
    )
    async with running_service("agent", agent.build, nats_server.url):
        yield await eventually(
            lambda: agent.clusters[0] if agent.clusters and agent.clusters[0].ready else None, 60, what="agent ready"
        )



@pytest.fixture
def descriptions(js: JetStreamContext, cluster: ClusterAgent) -> Descriptions:
    return Descriptions(js, cluster.identity.namespace)

async def test_objects_changed_or_deleted_with_kubectl_are_put_back_with_an_event(
    kube_children: list[ControlPlane], cluster: ClusterAgent, descriptions: Descriptions
) -> None:
    plane = kube_children[0]
    ns = f"drift-{uuid.uuid4().hex[:8]}"
    manifests = [namespace(ns), configmap(ns, "settings", {"a": "1"}), deployment(ns, "web", 2)]
    await descriptions.deployed("shop", manifests)
    original = await kubectl_json(plane, "deployment", "-n", ns, "web")
    assert original is not None

    # An edit of a field the agent applied is undone; a key the user added (no field of the agent's) stays.
    edit = json.dumps({"data": {"a": "edited", "b": "mine"}})
    await kubectl(plane, "patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", edit)

    async def configmap_data() -> Any:
        found = await kubectl_json(plane, "configmap", "settings", "-n", ns)
        return None if found is None else found.get("data")

    await eventually(lambda: _equals(configmap_data(), {"a": "1", "b": "mine"}), 30, what="ConfigMap put back")
    events = await eventually(lambda: descriptions.restore_events("shop"), 30, what="Event for the ConfigMap")
    assert any(f"v1 ConfigMap {ns}/settings" in message for message in events), events

    # A Deployment deleted in the child is recreated (a new object, as the agent applies it).
    await kubectl(plane, "delete", "deployment", "web", "-n", ns, "--wait=false")

    async def recreated() -> dict[str, Any] | None:
        found = await kubectl_json(plane, "deployment", "web", "-n", ns)
        same = found is None or found["metadata"]["uid"] == original["metadata"]["uid"]
        return None if same or found is None or "deletionTimestamp" in found["metadata"] else found

    again = await eventually(recreated, 30, what="Deployment recreated")
    assert again["spec"]["replicas"] == 2
    await eventually(
        lambda: _any_mentions(descriptions.restore_events("shop"), f"apps/v1 Deployment {ns}/web"), 30, what="Event"
    )

    # Settled: another reconcile (status reports included) re-applies nothing, so nothing changes.
    settled = await kubectl_json(plane, "configmap", "settings", "-n", ns)
    assert settled is not None
    generation = again["metadata"]["generation"]
    count = len(await descriptions.restore_events("shop"))

    async def unchanged() -> bool:
        now = await kubectl_json(plane, "configmap", "settings", "-n", ns)
        deploy = await kubectl_json(plane, "deployment", "web", "-n", ns)
        return (
            now is not None
            and deploy is not None
            and now["metadata"]["resourceVersion"] == settled["metadata"]["resourceVersion"]
            and deploy["metadata"]["generation"] == generation
            and len(await descriptions.restore_events("shop")) == count
        )

    await holds(unchanged, SETTLE_SECONDS, "the agent re-applies nothing once the child is as desired")


async def test_replicas_another_manager_owns_stay_when_a_localization_removed_them(
    kube_children: list[ControlPlane], cluster: ClusterAgent, descriptions: Descriptions
) -> None:
    plane = kube_children[0]
    ns = f"hpa-{uuid.uuid4().hex[:8]}"
    scaled = without_replicas(cluster.identity.namespace, deployment(ns, "by-hpa", 2))
    await descriptions.deployed("apps", [namespace(ns), scaled, deployment(ns, "fixed", 2)])

    # An HPA-like manager scales both through the scale subresource, as an HPA does.
    for name in ("by-hpa", "fixed"):
        await kubectl(plane, "scale", "deployment", name, "-n", ns, "--replicas=3")

    async def replicas(name: str) -> int | None:
        found = await kubectl_json(plane, "deployment", name, "-n", ns)
        return None if found is None else int(found["spec"].get("replicas", 0))

    # Positive control: replicas the Description carries are the agent's, so they are put back.
    await eventually(lambda: _equals(replicas("fixed"), 2), 30, what="fixed Deployment back to 2 replicas")
    await eventually(
        lambda: _any_mentions(descriptions.restore_events("apps"), f"apps/v1 Deployment {ns}/fixed"), 30, what="Event"
    )
    hpa = await kubectl_json(plane, "deployment", "by-hpa", "-n", ns)
    assert hpa is not None and hpa["spec"]["replicas"] == 3

    async def left_alone() -> bool:
        found = await kubectl_json(plane, "deployment", "by-hpa", "-n", ns)
        events = await descriptions.restore_events("apps")
        return (
            found is not None
            and found["spec"]["replicas"] == 3
            and found["metadata"]["generation"] == hpa["metadata"]["generation"]
            and not any("by-hpa" in message for message in events)
        )

    await holds(left_alone, SETTLE_SECONDS, "replicas the Localization removed are the other manager's")


async def test_a_registered_agent_tells_of_the_restore_through_the_hubs_intake(
    hub: RegistrationHub, kube_children: list[ControlPlane], tmp_path: Path
) -> None:
    plane = kube_children[1]
    name, cm = f"kdrift-{uuid.uuid4().hex[:6]}", f"drifted-{uuid.uuid4().hex[:6]}"
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    args = (
        *("--nats-url", hub.secure.server.url, "--cluster-name", name),
        *("--backend", "kube", "--kubeconfig", str(plane.kubeconfig)),
    )
    async with running_agent(hub, tmp_path / "state", *args, timeout=60):
        [registered] = [c for c in await clusters.list() if c.metadata.name == name]
        descriptions = Descriptions(hub.nc.jetstream(), registered.metadata.namespace or "")
        await descriptions.deployed("registered", [configmap("default", cm, {"a": "1"})])

        await kubectl(plane, "patch", "configmap", cm, "-n", "default", "--type=merge", "-p", '{"data":{"a":"2"}}')
        found = await eventually(
            lambda: _any_mentions(descriptions.restore_events("registered"), f"v1 ConfigMap default/{cm}"),
            30,
            what="the restore's Event, recorded through the intake",
        )
        assert found
        now = await kubectl_json(plane, "configmap", cm, "-n", "default")
        assert now is not None and now["data"] == {"a": "1"}


async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _any_mentions(messages: Any, text: str) -> bool:
    return any(text in message for message in await messages)

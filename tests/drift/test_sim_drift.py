"""Drift recovery on a simulated cluster: what is changed or deleted in the child behind the
agent's back is put back, with an Event; fields the agent does not apply (replicas another
writer set once a Localization removed them) are left alone; nothing loops."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.backends.apiserver import UpstreamRequest
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent, StatusSettings
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.js import JetStreamContext

from tests.drift.helpers import Descriptions, configmap, deployment, namespace, without_replicas

SETTLE_SECONDS = 2.0
OWNER = "clusternet-x.app"


@pytest.fixture
async def cluster(nats_server: NatsServer) -> AsyncIterator[ClusterAgent]:
    agent = Agent(AgentOptions(cluster_name=f"drift-{uuid.uuid4().hex[:8]}", sizing=Sizing(nodes=2)))
    async with running_service("agent", agent.build, nats_server.url):
        yield await eventually(
            lambda: agent.clusters[0] if agent.clusters and agent.clusters[0].ready else None, 30, what="agent ready"
        )


def sim(cluster: ClusterAgent) -> SimCluster:
    assert isinstance(cluster.backend, SimCluster)
    return cluster.backend


def body(child: SimCluster, ref: ObjectRef) -> dict[str, Any] | None:
    obj = child.objects.get(ref)
    return None if obj is None else obj.body


def path(ref: ObjectRef) -> str:
    base = "/api/v1" if ref.api_version == "v1" else f"/apis/{ref.api_version}"
    plural = {"ConfigMap": "configmaps", "Deployment": "deployments"}[ref.kind]
    return f"{base}/namespaces/{ref.namespace}/{plural}/{ref.name}"


async def in_child(child: SimCluster, method: str, ref: ObjectRef, patch: Any = None) -> dict[str, Any]:
    """A write made in the child itself, through the simulated cluster's Kubernetes API."""
    headers = [("Accept", "application/json"), ("Content-Type", "application/merge-patch+json")]
    raw = b"" if patch is None else json.dumps(patch).encode()
    response = await child.apiserver().send(UpstreamRequest(method, path(ref), "", headers, raw))
    answer: dict[str, Any] = json.loads(b"".join([chunk async for chunk in response.body]))
    assert response.status == 200, answer
    return answer



@pytest.fixture
def descriptions(js: JetStreamContext, cluster: ClusterAgent) -> Descriptions:
    return Descriptions(js, cluster.identity.namespace)

async def test_objects_changed_or_deleted_in_the_child_are_put_back_with_an_event(
    cluster: ClusterAgent, descriptions: Descriptions
) -> None:
    child = sim(cluster)
    ns = f"drift-{uuid.uuid4().hex[:8]}"
    manifests = [namespace(ns), configmap(ns, "settings", {"a": "1"}), deployment(ns, "web", 2)]
    await descriptions.deployed("shop", manifests)
    settings, web = ObjectRef("v1", "ConfigMap", ns, "settings"), ObjectRef("apps/v1", "Deployment", ns, "web")

    # The agent's field is put back; a key someone else added stays theirs.
    await in_child(child, "PATCH", settings, {"data": {"a": "edited", "b": "mine"}})
    await eventually(lambda: (body(child, settings) or {}).get("data") == {"a": "1", "b": "mine"}, 10, what="put back")
    events = await eventually(lambda: descriptions.restore_events("shop"), 10, what="Event for the ConfigMap")
    assert any(f"v1 ConfigMap {ns}/settings" in message for message in events), events

    # A deleted Deployment comes back as a new object, with its replicas scheduled again.
    uid = (body(child, web) or {})["metadata"]["uid"]
    await in_child(child, "DELETE", web)

    def recreated() -> dict[str, Any] | None:
        found = body(child, web)
        return found if found is not None and found["metadata"]["uid"] != uid else None

    again = await eventually(recreated, 10, what="Deployment recreated")
    assert again["spec"]["replicas"] == 2
    await eventually(lambda: (body(child, web) or {}).get("status", {}).get("readyReplicas") == 2, 10, what="ready")
    await eventually(
        lambda: _mentions(descriptions.restore_events("shop"), f"apps/v1 Deployment {ns}/web"), 10, what="Event"
    )

    # Settled: nothing is written again (no re-apply loop), and no further Event.
    versions = {ref: (body(child, ref) or {})["metadata"]["resourceVersion"] for ref in (settings, web)}
    count = len(await descriptions.restore_events("shop"))

    async def unchanged() -> bool:
        now = {ref: (body(child, ref) or {})["metadata"]["resourceVersion"] for ref in (settings, web)}
        return now == versions and len(await descriptions.restore_events("shop")) == count

    await holds(unchanged, SETTLE_SECONDS, "the agent re-applies nothing once the child is as desired")


async def test_replicas_another_writer_owns_stay_when_a_localization_removed_them(
    cluster: ClusterAgent, descriptions: Descriptions
) -> None:
    child = sim(cluster)
    ns = f"hpa-{uuid.uuid4().hex[:8]}"
    scaled = without_replicas(cluster.identity.namespace, deployment(ns, "by-hpa", 2))
    await descriptions.deployed("apps", [namespace(ns), scaled, deployment(ns, "fixed", 2)])
    by_hpa, fixed = ObjectRef("apps/v1", "Deployment", ns, "by-hpa"), ObjectRef("apps/v1", "Deployment", ns, "fixed")

    for ref in (by_hpa, fixed):
        await in_child(child, "PATCH", ref, {"spec": {"replicas": 3}})
    # Positive control: replicas the Description carries are the agent's, so they are put back.
    await eventually(lambda: (body(child, fixed) or {})["spec"]["replicas"] == 2, 10, what="fixed back to 2")
    await eventually(
        lambda: _mentions(descriptions.restore_events("apps"), f"apps/v1 Deployment {ns}/fixed"), 10, what="Event"
    )
    generation = (body(child, by_hpa) or {})["metadata"]["generation"]

    async def left_alone() -> bool:
        now = body(child, by_hpa) or {}
        events = await descriptions.restore_events("apps")
        return (
            now["spec"]["replicas"] == 3
            and now["metadata"]["generation"] == generation
            and not any("by-hpa" in message for message in events)
        )

    await holds(left_alone, SETTLE_SECONDS, "replicas the Localization removed are the other writer's")


async def test_a_cluster_the_hub_pushes_to_puts_back_what_was_pushed(
    nats_server: NatsServer, js: JetStreamContext
) -> None:
    agent = Agent(
        AgentOptions(
            cluster_name=f"push-{uuid.uuid4().hex[:6]}",
            sync_mode=ClusterSyncMode.PUSH,
            status=StatusSettings(app_pusher=True),
        )
    )
    child = sim(agent.clusters[0])
    ns = f"push-{uuid.uuid4().hex[:8]}"
    descriptions = Descriptions(js, agent.clusters[0].identity.namespace)
    settings = ObjectRef("v1", "ConfigMap", ns, "settings")
    async with (
        running_service("agent", agent.build, nats_server.url),
        running_service("clusternet-deployer", build_deployer, nats_server.url),
    ):
        await descriptions.deployed("pushed", [namespace(ns), configmap(ns, "settings", {"a": "1"})])
        await in_child(child, "PATCH", settings, {"data": {"a": "edited"}})
        await eventually(lambda: (body(child, settings) or {}).get("data") == {"a": "1"}, 10, what="put back")
        await eventually(
            lambda: _mentions(descriptions.restore_events("pushed"), f"v1 ConfigMap {ns}/settings"), 10, what="Event"
        )
        # Removed by the hub: what it pushed is forgotten, so nothing is put back any more.
        await descriptions.store.delete(descriptions.cluster_ns, "pushed")
        await eventually(lambda: body(child, settings) is None, 10, what="pruned")


async def test_an_apply_keeps_other_writers_fields_and_drops_only_what_it_no_longer_applies(tmp_path: Path) -> None:
    child = SimCluster("c1", Sizing(nodes=1), state_dir=tmp_path)
    await child.start()
    ref = ObjectRef("v1", "ConfigMap", "default", "cfg")
    cm = configmap("default", "cfg", {"a": "1", "gone": "soon"})
    outcome = await child.apply(OWNER, [cm])
    assert outcome.applied == [ref] and outcome.restored == []
    await in_child(child, "PATCH", ref, {"data": {"theirs": "x"}, "metadata": {"labels": {"team": "them"}}})
    await child.close()

    # Restarted from its state file, the cluster still knows which fields were the agent's.
    child = SimCluster("c1", Sizing(nodes=1), state_dir=tmp_path)
    await child.start()
    outcome = await child.apply(OWNER, [configmap("default", "cfg", {"a": "2"})])
    assert outcome.restored == [], "a changed manifest is no drift"
    stored = body(child, ref) or {}
    assert stored["data"] == {"a": "2", "theirs": "x"}
    assert stored["metadata"]["labels"]["team"] == "them"
    version = stored["metadata"]["resourceVersion"]
    outcome = await child.apply(OWNER, [configmap("default", "cfg", {"a": "2"})])
    assert outcome.restored == [] and (body(child, ref) or {})["metadata"]["resourceVersion"] == version
    await child.close()


async def _mentions(messages: Any, text: str) -> bool:
    return any(text in message for message in await messages)


async def test_a_status_update_is_no_drift_and_a_change_after_it_still_is() -> None:
    # The agent's own writes and status updates are not checked field by field (drift.py): a
    # change by anyone else after them must still be found, and put back by the next apply.
    child = SimCluster("c1", Sizing(nodes=1))
    await child.start()
    drifted: list[str] = []
    child.on_drift(drifted.append)
    ref = ObjectRef("apps/v1", "Deployment", "d1", "web")
    outcome = await child.apply(OWNER, [namespace("d1"), deployment("d1", "web", 2)])
    assert outcome.failures == [] and drifted == []
    assert child.objects.set_status(ref, {"readyReplicas": 7})
    assert drifted == [], "a status update is no drift"
    await in_child(child, "PATCH", ref, {"metadata": {"labels": {"team": "them"}}})
    assert drifted == [], "a field the agent does not apply is no drift"
    await in_child(child, "PATCH", ref, {"spec": {"template": {"spec": {"containers": [{"name": "x", "image": "y"}]}}}})
    assert set(drifted) == {OWNER}
    drifted.clear()
    outcome = await child.apply(OWNER, [namespace("d1"), deployment("d1", "web", 2)])
    assert outcome.restored == [ref] and drifted == []
    assert (body(child, ref) or {})["spec"]["template"]["spec"]["containers"][0]["name"] != "x"
    assert (body(child, ref) or {})["metadata"]["labels"]["team"] == "them"
    await in_child(child, "PATCH", ref, {"spec": {"replicas": 5}})
    assert set(drifted) == {OWNER}, "drift is found again after the put-back"

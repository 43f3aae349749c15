"""The deployer in-process against the session's nats-server, fed as the hub and scheduler would."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import (
    Base,
    Description,
    DescriptionStatus,
    Localization,
    Subscription,
    SubscriptionStatus,
)
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import KubeObject, ObjectMeta
from clusternet_nats.api.registry import by_kind
from clusternet_nats.deployer.service import build
from clusternet_nats.domain.names import short_hash
from clusternet_nats.store import BINDINGS_BUCKET, JsonBucket, ObjectStore, StatusStore, list_events, object_key
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext


@dataclass
class Upstream:
    """Writes objects the way the hub, the scheduler and the agent do."""

    js: JetStreamContext
    ns: str

    def store(self, kind: str) -> ObjectStore[Any]:
        return ObjectStore(self.js, by_kind(kind))

    async def create(self, obj: KubeObject) -> Any:
        return await self.store(obj.kind).create(obj)

    async def get(self, kind: str, namespace: str, name: str) -> Any:
        return await self.store(kind).get(namespace, name)

    async def cluster(self, suffix: str) -> ManagedCluster:
        cluster = ManagedCluster.new(
            f"cluster-{suffix}",
            f"{self.ns}-{suffix}",
            metadata=ObjectMeta(labels={known.CLUSTER_NAME: f"cluster-{suffix}"}),
            spec={"clusterId": str(uuid.uuid4()), "syncMode": "Pull"},
        )
        created: ManagedCluster = await self.create(cluster)
        return created

    async def bind(self, sub: Subscription, clusters: list[ManagedCluster], revision: int = 0) -> int:
        binding = SubscriptionBinding(
            subscription_uid=sub.metadata.uid or "",
            spec_hash=spec_hash(sub.spec),
            binding_clusters=sorted(c.namespaced_name() for c in clusters),
        )
        bucket = JsonBucket(self.js, BINDINGS_BUCKET)
        key = object_key(sub.namespace, sub.name)
        if revision:
            return await bucket.write(key, binding.to_json(), revision)
        return await bucket.create(key, binding.to_json())


@pytest.fixture
async def hub(js: JetStreamContext, unique_ns: str) -> Upstream:
    return Upstream(js, unique_ns)


@pytest.fixture
async def deployer(nats_server: NatsServer, js: JetStreamContext) -> AsyncIterator[None]:
    async with running_service("clusternet-deployer", build, nats_server.url):
        yield


def _manifests(ns: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns, "uid": "from-the-user", "resourceVersion": "7"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2},
        },
    ]


def _subscription(ns: str, name: str = "app") -> Subscription:
    return Subscription.new(
        name,
        ns,
        spec={
            "subscribers": [{"clusterAffinity": {}}],
            "feeds": [
                {"apiVersion": "v1", "kind": "Namespace", "name": ns},
                {"apiVersion": "v1", "kind": "Service", "namespace": ns, "name": "web"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web"},
            ],
        },
    )


def _replicas_localization(cluster: ManagedCluster, ns: str) -> Localization:
    return Localization.new(
        "scale",
        cluster.namespace,
        spec={
            "feed": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web"},
            "overrides": [
                {"name": "scale", "type": "JSONPatch", "value": '[{"op":"replace","path":"/spec/replicas","value":5}]'}
            ],
        },
    )


def _broken_localization(cluster: ManagedCluster, ns: str) -> Localization:
    return Localization.new(
        "broken",
        cluster.namespace,
        spec={
            "overridePolicy": "ApplyNow",
            "feed": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web"},
            "overrides": [
                {
                    "name": "bad-path",
                    "type": "FieldMergePatch",
                    "fieldPath": "/data/nope",
                    "fieldFormat": "JSON",
                    "value": "{}",
                }
            ],
        },
    )


def _rendered(description: Description) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in description.spec.raw or []]


async def test_subscription_is_rendered_per_cluster_aggregated_rebound_and_collected(
    hub: Upstream, deployer: None
) -> None:
    ns = hub.ns
    cluster_a, cluster_b = await hub.cluster("a"), await hub.cluster("b")
    for manifest in _manifests(ns):
        await hub.create(parse_object(manifest))
    await hub.create(_replicas_localization(cluster_a, ns))
    sub: Subscription = await hub.create(_subscription(ns))
    binding_revision = await hub.bind(sub, [cluster_a, cluster_b])
    base_name = f"app-{short_hash(ns, 'app')}"

    async def descriptions() -> list[Description]:
        found = [await hub.get("Description", c.namespace, f"{base_name}-generic") for c in (cluster_a, cluster_b)]
        return found if all(found) else []

    desc_a, desc_b = await eventually(descriptions, timeout=20, what="generic Descriptions in both clusters")
    for cluster, desc in ((cluster_a, desc_a), (cluster_b, desc_b)):
        base: Base = await hub.get("Base", cluster.namespace, base_name)
        assert [feed.name for feed in base.spec.feeds] == [ns, "web", "web"]
        assert base.labels == {
            known.CREATED_BY: known.DEPLOYER,
            known.CONFIG_KIND: "Subscription",
            known.CONFIG_NAME: "app",
            known.CONFIG_NAMESPACE: ns,
            known.CONFIG_UID: sub.metadata.uid,
            known.SUBS_NAME: "app",
            known.SUBS_NAMESPACE: ns,
            known.SUBS_UID: sub.metadata.uid,
            known.CLUSTER_ID: cluster.spec.cluster_id,
            known.CLUSTER_NAME: cluster.name,
        }
        assert desc.labels == {
            **base.labels,
            known.CONFIG_KIND: "Base",
            known.CONFIG_NAME: base_name,
            known.CONFIG_NAMESPACE: cluster.namespace,
            known.CONFIG_UID: base.metadata.uid,
        }
        assert desc.spec.deployer == "Generic"
    namespace, service, deployment = _rendered(desc_a)
    assert (namespace["kind"], service["kind"], deployment["kind"]) == ("Namespace", "Service", "Deployment")
    assert deployment["metadata"] == {"name": "web", "namespace": ns}  # server fields and status dropped
    assert "status" not in deployment
    assert deployment["spec"]["replicas"] == 5  # the Localization in cluster a
    assert _rendered(desc_b)[2]["spec"]["replicas"] == 2
    assert await hub.get("Description", cluster_a.namespace, f"{base_name}-helm") is None

    # The agents report: both Descriptions deployed.
    statuses = StatusStore(hub.js, "descriptions-status", DescriptionStatus)
    observed = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "observedGeneration": 1}
    for desc in (desc_a, desc_b):
        status = DescriptionStatus.model_validate(
            {
                "phase": "Success",
                "manifestStatuses": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "namespace": ns,
                        "name": "web",
                        "observedStatus": observed,
                    }
                ],
            }
        )
        await statuses.put(object_key(desc.namespace, desc.name), status, 0)
    sub_status = StatusStore(hub.js, "subscriptions-status", SubscriptionStatus)
    sub_key = object_key(ns, "app")

    async def completed() -> SubscriptionStatus | None:
        found = await sub_status.get(sub_key)
        return found.value if found and found.value.completed_releases == 2 else None

    aggregated = await eventually(completed, timeout=20, what="completedReleases 2")
    assert aggregated is not None and aggregated.aggregated_statuses is not None
    by_kind = {status.kind: status for status in aggregated.aggregated_statuses}
    assert by_kind["Namespace"].feed_status_summary is not None
    assert by_kind["Namespace"].feed_status_summary.available is False  # no agent reported it
    summary = by_kind["Deployment"].feed_status_summary
    assert summary is not None and summary.available is True and summary.replica_status is not None
    assert (summary.replica_status.replicas, summary.replica_status.ready_replicas) == (4, 4)
    details = by_kind["Deployment"].feed_status_details or []
    assert [(d.cluster_id, d.cluster_name) for d in details] == [
        (cluster_a.spec.cluster_id, "cluster-a"),
        (cluster_b.spec.cluster_id, "cluster-b"),
    ]
    events = await list_events(hub.js, "Subscription", ns, "app")
    assert "SuccessfullyDeployed" in {event.reason for event in events}

    # The scheduler drops cluster b: its Base and Description go, cluster a's stay.
    await hub.bind(sub, [cluster_a], revision=binding_revision)

    async def unbound() -> bool:
        gone = await hub.get("Base", cluster_b.namespace, base_name) is None
        return gone and await hub.get("Description", cluster_b.namespace, f"{base_name}-generic") is None

    await eventually(unbound, timeout=20, what="cluster b's Base and Description deleted")
    assert await hub.get("Description", cluster_a.namespace, f"{base_name}-generic") is not None

    # The Subscription is deleted: its finalizer holds it while cluster a (which reported a
    # status) has not pruned; its Description goes at once, its Base waits for the child.
    await hub.store("Subscription").delete(ns, "app")
    description_a = object_key(cluster_a.namespace, f"{base_name}-generic")

    async def pending() -> bool:
        sub = await hub.get("Subscription", ns, "app")
        held = sub is not None and sub.metadata.deletion_timestamp is not None
        gone = await hub.get("Description", cluster_a.namespace, f"{base_name}-generic") is None
        return held and gone and await hub.get("Base", cluster_a.namespace, base_name) is not None

    await eventually(pending, timeout=20, what="the Subscription held while cluster a holds objects")
    await statuses.delete(description_a)  # what the agent does once it has pruned

    async def collected() -> bool:
        leftovers = [
            await hub.get("Subscription", ns, "app"),
            await hub.get("Base", cluster_a.namespace, base_name),
            await hub.get("Description", cluster_a.namespace, f"{base_name}-generic"),
            await sub_status.get(sub_key),
        ]
        return leftovers == [None, None, None, None]

    await eventually(collected, timeout=20, what="Base, Description and status of the deleted Subscription")


async def test_missing_feed_blocks_with_a_warning_and_orphans_are_collected_at_start(
    hub: Upstream, nats_server: NatsServer
) -> None:
    ns = hub.ns
    cluster = await hub.cluster("a")
    sub: Subscription = await hub.create(_subscription(ns))
    await hub.bind(sub, [cluster])
    base_name = f"app-{short_hash(ns, 'app')}"
    # Left behind by a Subscription deleted while no deployer ran.
    orphan = Base.new(
        "gone-xxxxx",
        cluster.namespace,
        metadata=ObjectMeta(labels={known.CREATED_BY: known.DEPLOYER, known.SUBS_UID: str(uuid.uuid4())}),
        spec={"feeds": []},
    )
    await hub.create(orphan)
    sub_statuses = StatusStore(hub.js, "subscriptions-status", SubscriptionStatus)
    await sub_statuses.put(object_key(ns, "gone"), SubscriptionStatus(completed_releases=1), 0)

    async with running_service("clusternet-deployer", build, nats_server.url):
        base: Base = await eventually(
            lambda: hub.get("Base", cluster.namespace, base_name), timeout=20, what="the Base"
        )

        async def warned() -> bool:
            events = await list_events(hub.js, "Base", cluster.namespace, base_name)
            return any(event.reason == "NonexistentNamespace" and ns in event.message for event in events)

        await eventually(warned, timeout=20, what="a NonexistentNamespace warning on the Base")
        await eventually(
            lambda: _is_none(hub.get("Base", cluster.namespace, "gone-xxxxx")), timeout=20, what="orphan collected"
        )
        await eventually(lambda: _is_none(sub_statuses.get(object_key(ns, "gone"))), timeout=20, what="orphan status")
        assert await hub.get("Description", cluster.namespace, f"{base_name}-generic") is None

        # The feeds arrive: the Description is rendered.
        for manifest in _manifests(ns):
            await hub.create(parse_object(manifest))
        desc: Description = await eventually(
            lambda: hub.get("Description", cluster.namespace, f"{base_name}-generic"), timeout=20, what="Description"
        )
        assert desc.labels[known.CONFIG_UID] == base.metadata.uid
        assert len(_rendered(desc)) == 3

        # A broken override: the Description is left as it was, and the Localization is told why.
        await hub.create(_broken_localization(cluster, ns))

        async def override_warned() -> bool:
            events = await list_events(hub.js, "Localization", cluster.namespace, "broken")
            return any(e.reason == "FailedApplyingOverrides" and "'bad-path'" in e.message for e in events)

        await eventually(override_warned, timeout=20, what="FailedApplyingOverrides on the Localization")
        current = await hub.get("Description", cluster.namespace, desc.name)
        assert current.metadata.resource_version == desc.metadata.resource_version

        # The agent reports a failure: the Subscription gets a Warning with the reason.
        failed = DescriptionStatus.model_validate({"phase": "Failure", "reason": "quota exceeded"})
        await StatusStore(hub.js, "descriptions-status", DescriptionStatus).put(
            object_key(cluster.namespace, desc.name), failed, 0
        )

        async def failure_warned() -> bool:
            events = await list_events(hub.js, "Subscription", ns, "app")
            return any(e.reason == "UnSuccessfullyDeployed" and "quota exceeded" in e.message for e in events)

        await eventually(failure_warned, timeout=20, what="UnSuccessfullyDeployed on the Subscription")
        await hub.store("Subscription").delete(ns, "app")
        # The agent prunes and deletes its status (the Base waits for that): then all goes.
        reported = StatusStore(hub.js, "descriptions-status", DescriptionStatus)
        await reported.delete(object_key(cluster.namespace, desc.name))
        await eventually(lambda: _is_none(hub.get("Base", cluster.namespace, base_name)), timeout=20, what="cleanup")


async def _is_none(pending: Any) -> bool:
    return await pending is None

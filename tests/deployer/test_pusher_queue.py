"""The pusher queues a Description only for a cluster the hub deploys to (Push, Dual with the
agent's app pusher on). A Pull fleet's rollout used to queue every Description there, each key
dropped by its pass: 10,000 passes for nothing, beside the Subscription's status."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from clusternet_nats.api.apps import DeployerType, Description, DescriptionSpec
from clusternet_nats.api.clusters import ClusterSyncMode, ManagedCluster, ManagedClusterSpec, ManagedClusterStatus
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.caches import Caches
from clusternet_nats.deployer.pusher import Pusher
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore, object_key
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

from tests.deployer.harness import on_caches


@pytest.fixture
async def pusher(nats_server: NatsServer) -> AsyncIterator[tuple[Pusher, list[str]]]:
    queued: list[str] = []

    def recording(ctx: ServiceContext, caches: Caches) -> Pusher:
        made = Pusher(ctx, caches)
        add = made.queue.add

        def recorded(key: str) -> None:
            queued.append(key)
            add(key)

        made.queue.add = recorded  # type: ignore[method-assign]
        return made

    async with on_caches(nats_server.url, "deployer-pusher-queue", recording) as made:
        yield made, queued


async def _cluster(js: JetStreamContext, namespace: str, mode: ClusterSyncMode) -> str:
    clusters: ObjectStore[ManagedCluster] = ObjectStore(js, KindInfo.of(ManagedCluster))
    spec = ManagedClusterSpec(cluster_id=str(uuid.uuid4()), sync_mode=mode)
    cluster = await clusters.create(ManagedCluster.new("child", namespace, spec=spec))
    statuses: StatusStore[ManagedClusterStatus] = StatusStore(
        js, KindInfo.of(ManagedCluster).status_bucket or "", ManagedClusterStatus
    )
    key = object_key(cluster.namespace, cluster.name)
    await statuses.put(key, ManagedClusterStatus(app_pusher=True), 0)
    return key


async def test_only_descriptions_of_clusters_the_hub_deploys_to_are_queued(
    pusher: tuple[Pusher, list[str]], js: JetStreamContext, unique_ns: str
) -> None:
    made, queued = pusher
    pull_ns, push_ns = f"{unique_ns}-pull", f"{unique_ns}-push"
    pull_cluster = await _cluster(js, pull_ns, ClusterSyncMode.PULL)
    push_cluster = await _cluster(js, push_ns, ClusterSyncMode.PUSH)
    await eventually(
        lambda: made.cluster_statuses.get(pull_cluster) and made.cluster_statuses.get(push_cluster),
        what="both clusters' statuses are cached",
    )
    await eventually(
        lambda: made.caches.clusters.get(pull_cluster) and made.caches.clusters.get(push_cluster),
        what="both clusters are cached",
    )

    descriptions: ObjectStore[Description] = ObjectStore(js, KindInfo.of(Description))
    spec = DescriptionSpec(deployer=DeployerType.GENERIC, raw=[])
    pulled = await descriptions.create(Description.new("app", pull_ns, spec=spec))
    pushed = await descriptions.create(Description.new("app", push_ns, spec=spec))
    await eventually(
        lambda: (
            made.caches.descriptions.get(descriptions.key_of(pulled))
            and made.caches.descriptions.get(descriptions.key_of(pushed))
        ),
        what="both Descriptions are cached",
    )
    await eventually(lambda: descriptions.key_of(pushed) in queued, what="the Push cluster's Description queued")
    assert descriptions.key_of(pulled) not in queued


async def test_a_prune_keeps_its_own_namespace_descriptions_as_they_come_and_go(
    pusher: tuple[Pusher, list[str]], js: JetStreamContext, unique_ns: str
) -> None:
    """What a cluster turning pushable is told to keep: its namespace's Descriptions, from an
    index kept as they change (not a pass over every Description of the fleet per cluster)."""
    made, _ = pusher
    mine, other = unique_ns, f"{unique_ns}x"  # a namespace its name's prefix must not pull in
    descriptions: ObjectStore[Description] = ObjectStore(js, KindInfo.of(Description))
    spec = DescriptionSpec(deployer=DeployerType.GENERIC, raw=[])
    first = await descriptions.create(Description.new("app", mine, spec=spec))
    second = await descriptions.create(Description.new("web", mine, spec=spec))
    await descriptions.create(Description.new("app", other, spec=spec))
    both = sorted([descriptions.key_of(first), descriptions.key_of(second)])
    await eventually(lambda: made.descriptions_in(other) == [object_key(other, "app")], what="the other's heard")
    assert made.descriptions_in(mine) == both
    await descriptions.delete(mine, "app")
    await eventually(
        lambda: made.descriptions_in(mine) == [descriptions.key_of(second)], what="the deleted one no longer kept"
    )

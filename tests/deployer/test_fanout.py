"""A Subscription bound to many clusters: every Description rendered once and right, with the
overrides of its own cluster, and a Globalization change rewriting exactly the Descriptions whose
content it changes. Writes are counted on the bucket's subjects (every KV write is a message
there), so the test says how many writes there were, whatever the order or the timing."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Description, Globalization, Localization, Subscription
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import ObjectMeta
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.service import build
from clusternet_nats.domain.names import short_hash
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import BINDINGS_BUCKET, JsonBucket, ObjectStore, object_key
from clusternet_nats.store.keys import kv_subject_prefix
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

CLUSTERS = 200
EDGE_EVERY = 4
"""Every 4th cluster is labelled tier=edge, which a second Globalization selects."""


def _replicas_patch(replicas: int) -> str:
    return json.dumps([{"op": "replace", "path": "/spec/replicas", "value": replicas}])


def _globalization(name: str, ns: str, override: dict[str, Any], affinity: dict[str, Any] | None) -> Globalization:
    spec: dict[str, Any] = {
        "overridePolicy": "ApplyNow",
        "feed": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web"},
        "overrides": [override],
    }
    if affinity is not None:
        spec["clusterAffinity"] = affinity
    return Globalization.new(name, None, spec=spec)


async def subscribe(js: JetStreamContext, ns: str, feeds: list[dict[str, str]]) -> Subscription:
    """Subscription `app` of `feeds` for every cluster."""
    sub = Subscription.new("app", ns, spec={"subscribers": [{"clusterAffinity": {}}], "feeds": feeds})
    return await ObjectStore(js, KindInfo.of(Subscription)).create(sub)


async def bind(js: JetStreamContext, sub: Subscription, clusters: list[ManagedCluster]) -> None:
    """What the scheduler would write: `sub` bound to every one of `clusters`."""
    binding = SubscriptionBinding(
        subscription_uid=sub.metadata.uid or "",
        spec_hash=spec_hash(sub.spec),
        binding_clusters=sorted(c.namespaced_name() for c in clusters),
    )
    await JsonBucket(js, BINDINGS_BUCKET).create(object_key(sub.namespace, sub.name), binding.to_json())


@pytest.fixture
async def deployer(nats_server: NatsServer) -> AsyncIterator[None]:
    async with running_service("clusternet-deployer", build, nats_server.url):
        yield


async def test_many_clusters_render_once_each_and_a_globalization_change_rewrites_only_what_changes(
    nc: NATS, js: JetStreamContext, unique_ns: str, deployer: None
) -> None:
    ns = unique_ns
    base_name = f"app-{short_hash(ns, 'app')}"
    description_name = f"{base_name}-generic"
    writes: Counter[str] = Counter()
    prefix = kv_subject_prefix(KindInfo.of(Description).bucket)

    async def written(msg: Msg) -> None:
        writes[msg.subject.removeprefix(prefix)] += 1

    counting = await nc.subscribe(f"{prefix}*.{description_name}", cb=written)

    clusters_store: ObjectStore[ManagedCluster] = ObjectStore(js, KindInfo.of(ManagedCluster))
    clusters = await asyncio.gather(
        *(
            clusters_store.create(
                ManagedCluster.new(
                    f"c{i:03d}",
                    f"{ns}-{i:03d}",
                    metadata=ObjectMeta(
                        labels={known.CLUSTER_NAME: f"c{i:03d}", "tier": "edge" if i % EDGE_EVERY == 0 else "core"}
                    ),
                    spec={"clusterId": str(uuid.uuid4()), "syncMode": "Pull"},
                )
            )
            for i in range(CLUSTERS)
        )
    )
    local = clusters[1]  # core, not edge: only the Localization sets it apart
    manifests = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    ]
    for manifest in manifests:
        obj = parse_object(manifest)
        await ObjectStore(js, KindInfo.of(type(obj))).create(obj)
    globalizations: ObjectStore[Globalization] = ObjectStore(js, KindInfo.of(Globalization))
    everywhere = await globalizations.create(
        _globalization(
            f"{ns}-all", ns, {"name": "scale", "type": "JSONPatch", "value": _replicas_patch(3)}, affinity=None
        )
    )
    await globalizations.create(
        _globalization(
            f"{ns}-edge",
            ns,
            {"name": "edge", "type": "MergePatch", "value": '{"metadata":{"labels":{"tier":"edge"}}}'},
            affinity={"matchLabels": {"tier": "edge"}},
        )
    )
    await ObjectStore(js, KindInfo.of(Localization)).create(
        Localization.new(
            "scale",
            local.namespace,
            spec={
                "priority": 600,
                "feed": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web"},
                "overrides": [{"name": "scale", "type": "JSONPatch", "value": _replicas_patch(5)}],
            },
        )
    )
    sub = await subscribe(
        js,
        ns,
        [
            {"apiVersion": "v1", "kind": "Namespace", "name": ns},
            {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web"},
        ],
    )
    await bind(js, sub, clusters)
    descriptions: ObjectStore[Description] = ObjectStore(js, KindInfo.of(Description))

    def deployment(desc: Description) -> dict[str, Any]:
        rendered: dict[str, Any] = json.loads((desc.spec.raw or [])[1])
        return rendered

    async def rendered_with(everywhere_replicas: int) -> dict[str, Description] | None:
        """Every cluster's Description, once all have the replicas they should have."""
        found = {c.namespace: await descriptions.get(c.namespace, description_name) for c in clusters}
        expected = {c.namespace: everywhere_replicas for c in clusters} | {local.namespace: 5}
        if any(d is None or deployment(d)["spec"]["replicas"] != expected[n] for n, d in found.items()):
            return None
        return {n: d for n, d in found.items() if d is not None}

    first = await eventually(lambda: rendered_with(3), timeout=60, what=f"{CLUSTERS} Descriptions rendered")
    assert first is not None
    for i, cluster in enumerate(clusters):
        rendered = deployment(first[cluster.namespace])
        labels = rendered["metadata"].get("labels", {})
        assert (labels.get("tier") == "edge") == (i % EDGE_EVERY == 0), cluster.namespace
        assert rendered["metadata"]["namespace"] == ns
    await barrier(nc)
    assert len(writes) == CLUSTERS
    assert set(writes.values()) == {1}, "every Description written once"

    # The Globalization for all clusters changes: every Description but the one its
    # Localization overrides (replicas stay 5 there) is rewritten, each once.
    changed = everywhere.model_copy(deep=True)
    changed.spec.overrides[0].value = _replicas_patch(4)  # type: ignore[index]
    await globalizations.update(changed, everywhere)
    await eventually(lambda: rendered_with(4), timeout=60, what="the Globalization's change in every cluster")
    await barrier(nc)
    await counting.unsubscribe()
    local_key = object_key(local.namespace, description_name)
    assert writes[local_key] == 1, "content unchanged: not written again"
    assert {key: count for key, count in writes.items() if key != local_key} == {
        object_key(c.namespace, description_name): 2 for c in clusters if c is not local
    }


async def test_a_description_changed_or_deleted_behind_the_deployers_back_is_put_right(
    js: JetStreamContext, unique_ns: str, deployer: None
) -> None:
    """Clusters whose inputs did not change are skipped without rendering; a skip must still
    notice that their Description itself was changed or deleted by someone else."""
    ns = unique_ns
    clusters_store: ObjectStore[ManagedCluster] = ObjectStore(js, KindInfo.of(ManagedCluster))
    clusters = [
        await clusters_store.create(
            ManagedCluster.new(
                f"c{i}",
                f"{ns}-{i}",
                metadata=ObjectMeta(labels={known.CLUSTER_NAME: f"c{i}"}),
                spec={"clusterId": str(uuid.uuid4()), "syncMode": "Pull"},
            )
        )
        for i in range(3)
    ]
    namespace = parse_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await ObjectStore(js, KindInfo.of(type(namespace))).create(namespace)
    sub = await subscribe(js, ns, [{"apiVersion": "v1", "kind": "Namespace", "name": ns}])
    await bind(js, sub, clusters)
    descriptions: ObjectStore[Description] = ObjectStore(js, KindInfo.of(Description))
    name = f"app-{short_hash(ns, 'app')}-generic"

    async def all_rendered() -> list[Description] | None:
        found = [await descriptions.get(c.namespace, name) for c in clusters]
        return None if any(d is None or len(d.spec.raw or []) != 1 for d in found) else [d for d in found if d]

    first = await eventually(all_rendered, timeout=20, what="3 Descriptions")
    assert first is not None
    tampered = first[0].model_copy(update={"spec": first[0].spec.model_copy(update={"raw": []})})
    await descriptions.update(tampered, first[0])
    await descriptions.delete(clusters[1].namespace, name)
    again = await eventually(all_rendered, timeout=20, what="the changed and the deleted Description put right")
    assert again is not None
    assert again[0].spec == first[0].spec and again[1].spec == first[1].spec
    assert again[2] == first[2], "the untouched cluster's Description is not rewritten"

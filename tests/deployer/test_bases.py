"""A Base carries what Clusternet's deployer puts on it, and keeps what others added."""

from __future__ import annotations

from clusternet_nats.api.apps import Base, Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import ObjectMeta
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.bases import desired_base
from clusternet_nats.deployer.writes import Outcome, ensure
from clusternet_nats.domain.clusterinit import IS_DEFAULT_ANNOTATION
from clusternet_nats.store import ObjectStore
from nats.js import JetStreamContext


def _cluster(ns: str) -> ManagedCluster:
    spec = {"clusterId": "5f2ab4ce-04c2-4b39-9d1a-3b5c1a9e0f11", "syncMode": "Pull"}
    return ManagedCluster.new("edge", ns, spec=spec)


def _subscription(ns: str, annotations: dict[str, str] | None = None) -> Subscription:
    return Subscription.new(
        "init",
        ns,
        metadata=ObjectMeta(annotations=annotations),
        spec={
            "subscribers": [{"clusterAffinity": {}}],
            "feeds": [{"apiVersion": "v1", "kind": "Namespace", "name": "x"}],
        },
    )


def test_a_default_init_subscriptions_mark_is_copied_onto_its_bases(unique_ns: str) -> None:
    marked = desired_base(_subscription(unique_ns, {IS_DEFAULT_ANNOTATION: "true", "team": "a"}), _cluster(unique_ns))
    assert marked.metadata.annotations == {IS_DEFAULT_ANNOTATION: "true"}
    assert desired_base(_subscription(unique_ns), _cluster(unique_ns)).metadata.annotations is None


async def test_ensure_adds_annotations_and_keeps_others(js: JetStreamContext, unique_ns: str) -> None:
    store: ObjectStore[Base] = ObjectStore(js, KindInfo.of(Base))
    plain = desired_base(_subscription(unique_ns), _cluster(unique_ns))
    created, outcome = await ensure(store, None, plain)
    assert outcome is Outcome.CREATED
    annotated = created.model_copy(deep=True)
    annotated.metadata.annotations = {"someone.example/else": "kept"}
    current = await store.update(annotated, created)

    marked = desired_base(_subscription(unique_ns, {IS_DEFAULT_ANNOTATION: "true"}), _cluster(unique_ns))
    updated, outcome = await ensure(store, current, marked)
    assert outcome is Outcome.UPDATED
    assert updated.metadata.annotations == {"someone.example/else": "kept", IS_DEFAULT_ANNOTATION: "true"}
    again, outcome = await ensure(store, updated, marked)
    assert outcome is Outcome.UNCHANGED and again.metadata.resource_version == updated.metadata.resource_version

"""kube-apiserver's finalizer semantics in the object store, against a real JetStream: a DELETE
of an object with finalizers marks it, the update that drops the last finalizer removes it."""

import pytest
from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain.finalizers import APP_FINALIZER, with_finalizers, without
from clusternet_nats.store import ObjectStore
from clusternet_nats.store.errors import InvalidError
from nats.js import JetStreamContext


def subscription(ns: str, name: str) -> Subscription:
    return Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "subscribers": [{"clusterAffinity": {}}],
                "feeds": [{"apiVersion": "v1", "kind": "Namespace", "name": "foo"}],
            },
        }
    )


async def test_delete_with_finalizers_marks_then_last_finalizer_removes(js: JetStreamContext, unique_ns: str) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    created = await store.create(with_finalizers(subscription(unique_ns, "held"), [APP_FINALIZER, "x/other"]))
    assert created.metadata.deletion_timestamp is None

    marked = await store.delete_object(unique_ns, "held")
    assert marked is not None and marked.metadata.deletion_timestamp is not None
    stored = await store.require(unique_ns, "held")
    assert stored.metadata.deletion_timestamp == marked.metadata.deletion_timestamp
    assert stored.metadata.finalizers == [APP_FINALIZER, "x/other"]
    again = await store.delete_object(unique_ns, "held")  # a second DELETE changes nothing
    assert again is not None and again.metadata.resource_version == stored.metadata.resource_version

    # An update cannot clear the deletionTimestamp nor add a finalizer; it may drop one.
    cleared = stored.model_copy(deep=True)
    cleared.metadata.deletion_timestamp = None
    kept = await store.update(without(cleared, "x/other"), stored)
    assert (await store.require(unique_ns, "held")).metadata.deletion_timestamp == stored.metadata.deletion_timestamp
    with pytest.raises(InvalidError, match="no new finalizers can be added"):
        await store.update(with_finalizers(kept, [APP_FINALIZER, "x/new"]), kept)

    current = await store.require(unique_ns, "held")
    await store.update(without(current, APP_FINALIZER), current)
    assert await store.get(unique_ns, "held") is None


async def test_delete_without_finalizers_removes_and_apply_keeps_unnamed_finalizers(
    js: JetStreamContext, unique_ns: str
) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    await store.create(subscription(unique_ns, "plain"))
    gone = await store.delete_object(unique_ns, "plain")
    assert gone is not None and gone.metadata.deletion_timestamp is None
    assert await store.get(unique_ns, "plain") is None
    assert await store.delete_object(unique_ns, "plain") is None

    await store.create(with_finalizers(subscription(unique_ns, "applied"), [APP_FINALIZER]))
    reapplied = await store.apply(subscription(unique_ns, "applied"))  # a body that names no finalizers
    assert reapplied.metadata.finalizers == [APP_FINALIZER]
    explicit = subscription(unique_ns, "applied")
    explicit.metadata.finalizers = []  # named, and empty: cleared
    cleared = await store.apply(explicit)
    assert not cleared.metadata.finalizers
    assert (await store.delete_object(unique_ns, "applied")) is not None
    assert await store.get(unique_ns, "applied") is None

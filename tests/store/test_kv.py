"""Compare-and-set semantics of the object store, against a real JetStream."""

import uuid

import pytest
from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import AlreadyExistsError, ConflictError, JsonBucket, ObjectStore
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext


def subscription(ns: str, name: str, label: str = "a") -> Subscription:
    return Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "subscribers": [{"clusterAffinity": {"matchLabels": {"env": label}}}],
                "feeds": [{"apiVersion": "v1", "kind": "Namespace", "name": "foo"}],
            },
        }
    )


async def test_create_sets_server_fields_and_refuses_duplicates(js: JetStreamContext, unique_ns: str) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    created = await store.create(subscription(unique_ns, "s1"))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.generation == 1
    assert int(created.metadata.resource_version or 0) > 0
    with pytest.raises(AlreadyExistsError):
        await store.create(subscription(unique_ns, "s1"))
    fetched = await store.require(unique_ns, "s1")
    assert fetched == created


async def test_stale_update_conflicts_and_generation_tracks_spec(js: JetStreamContext, unique_ns: str) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    first = await store.create(subscription(unique_ns, "s2"))
    changed = subscription(unique_ns, "s2", label="b")
    changed.metadata.resource_version = first.metadata.resource_version
    second = await store.update(changed)
    assert second.metadata.generation == 2
    assert second.metadata.uid == first.metadata.uid
    stale = subscription(unique_ns, "s2", label="c")
    stale.metadata.resource_version = first.metadata.resource_version
    with pytest.raises(ConflictError):
        await store.update(stale)
    unchanged_but_stale = second.model_copy(deep=True)
    unchanged_but_stale.metadata.resource_version = first.metadata.resource_version
    with pytest.raises(ConflictError):
        await store.update(unchanged_but_stale)
    relabelled = second.model_copy(deep=True)
    relabelled.labels["team"] = "x"
    third = await store.update(relabelled)
    assert third.metadata.generation == 2, "a metadata-only change must not bump generation"


async def test_apply_creates_then_replaces_and_delete_allows_recreate(js: JetStreamContext, unique_ns: str) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    a = await store.apply(subscription(unique_ns, "s3"))
    b = await store.apply(subscription(unique_ns, "s3", label="z"))
    assert b.metadata.uid == a.metadata.uid
    assert b.spec.subscribers[0].cluster_affinity.match_labels == {"env": "z"}
    assert await store.delete(unique_ns, "s3") is True
    assert await store.get(unique_ns, "s3") is None
    assert await store.delete(unique_ns, "s3") is False
    c = await store.create(subscription(unique_ns, "s3"))
    assert c.metadata.uid != a.metadata.uid
    assert [s.name for s in await store.list(unique_ns)] == ["s3"]


async def test_values_are_readable_json_with_content_type(js: JetStreamContext, unique_ns: str) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    await store.create(subscription(unique_ns, "s4"))
    msg = await js.get_msg("KV_subscriptions", subject=f"$KV.subscriptions.{unique_ns}.s4")
    assert msg.headers is not None and msg.headers.get("Content-Type") == "application/json"
    assert msg.data is not None and b'"clusterAffinity"' in msg.data
    assert b"resourceVersion" not in msg.data, "the revision is the KV's, never stored in the value"


async def test_raw_bucket_create_over_tombstone(js: JetStreamContext, unique_ns: str) -> None:
    bucket = JsonBucket(js, "bindings")
    key = f"{unique_ns}.x"
    rev = await bucket.create(key, b"{}")
    await bucket.delete(key, rev)
    assert await bucket.get(key) is None
    assert await bucket.create(key, b'{"again":true}') > rev
    with pytest.raises(ConflictError):
        await bucket.write(key, b"{}", rev)


async def test_pipelined_writes_report_a_conflict_for_exactly_the_stale_key(
    js: JetStreamContext, unique_ns: str
) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    fresh = await store.create(subscription(unique_ns, "fresh"))
    stale = await store.create(subscription(unique_ns, "stale"))
    gone = await store.create(subscription(unique_ns, "gone"))
    moved_on = await store.update(subscription(unique_ns, "stale", label="b"), stale)
    await store.delete(unique_ns, "gone")

    results = await store.write_all(
        [
            (subscription(unique_ns, "fresh", label="x"), fresh),
            (subscription(unique_ns, "stale", label="y"), stale),
            (subscription(unique_ns, "new"), None),
            (subscription(unique_ns, "gone"), None),  # created over its tombstone
            (subscription(unique_ns, "fresh"), None),  # exists: refused
        ]
    )

    updated, conflict, new, recreated, duplicate = results
    assert isinstance(updated, Subscription) and updated.metadata.generation == 2
    assert isinstance(conflict, ConflictError) and not isinstance(conflict, AlreadyExistsError)
    assert conflict.key == store.key(unique_ns, "stale")
    assert isinstance(new, Subscription) and new.metadata.uid and new.metadata.generation == 1
    assert isinstance(recreated, Subscription) and recreated.metadata.uid != gone.metadata.uid
    assert isinstance(duplicate, AlreadyExistsError)
    assert await store.get(unique_ns, "stale") == moved_on, "a lost compare-and-set wrote nothing"
    for written in (updated, new, recreated):
        assert await store.get(unique_ns, written.name) == written


async def test_pipelined_write_of_an_unchanged_object_writes_nothing(js: JetStreamContext, unique_ns: str) -> None:
    store: ObjectStore[Subscription] = ObjectStore(js, by_kind("Subscription"))
    current = await store.create(subscription(unique_ns, "same"))
    last = (await js.stream_info(f"KV_{store.info.bucket}")).state.last_seq
    [result] = await store.write_all([(subscription(unique_ns, "same"), current)])
    assert result is current
    assert (await js.stream_info(f"KV_{store.info.bucket}")).state.last_seq == last


async def test_pipelined_batches_share_one_ack_subscription(js: JetStreamContext, nats_server: NatsServer) -> None:
    """Every batch's acks come to one inbox of the connection: a subscribe and an unsubscribe of a
    wildcard per batch made nats-server walk its reply map each time (store/kv.py: _AckInbox)."""
    spy = NATS()
    await spy.connect(nats_server.url)
    replies: list[str] = []

    async def heard(msg: Msg) -> None:
        if msg.subject.startswith("_INBOX."):
            replies.append(msg.subject)

    await spy.subscribe("_INBOX.>", cb=heard)
    await barrier(spy)
    bucket = JsonBucket(js, "bindings")
    prefix = f"t-{uuid.uuid4().hex[:10]}"
    try:
        for batch in range(3):
            written = await bucket.write_many([(f"{prefix}.{batch}-{i}", b"{}", 0) for i in range(4)])
            assert all(isinstance(revision, int) for revision in written)
        await eventually(lambda: len(replies) >= 12, timeout=10, what="the spy heard every ack")
    finally:
        await spy.close()
    inboxes = {reply.rsplit(".", 1)[0] for reply in replies}
    assert len(inboxes) == 1, inboxes
    assert len(set(replies)) == 12, "each publish has a token of its own"

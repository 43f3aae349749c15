"""Converging many derived objects at once: every write pipelined, a stale one reported after
the others are written, an unchanged one not written at all."""

from __future__ import annotations

import pytest
from clusternet_nats.api.apps import Base
from clusternet_nats.api.meta import ObjectMeta
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.writes import Outcome, ensure_all
from clusternet_nats.store import ConflictError, ObjectStore
from nats.js import JetStreamContext


def base(ns: str, name: str, feed: str) -> Base:
    return Base.new(
        name,
        ns,
        metadata=ObjectMeta(labels={"app": name}),
        spec={"feeds": [{"apiVersion": "v1", "kind": "Namespace", "name": feed}]},
    )


async def test_ensure_all_writes_what_changed_and_raises_the_stale_one_after(
    js: JetStreamContext, unique_ns: str
) -> None:
    store: ObjectStore[Base] = ObjectStore(js, KindInfo.of(Base))
    same = await store.create(base(unique_ns, "same", "a"))
    moved = await store.create(base(unique_ns, "moved", "a"))
    await store.update(base(unique_ns, "moved", "b"), moved)
    revision = (await js.stream_info(f"KV_{store.info.bucket}")).state.last_seq

    with pytest.raises(ConflictError) as raised:
        await ensure_all(
            store,
            [
                (same, base(unique_ns, "same", "a")),
                (moved, base(unique_ns, "moved", "c")),
                (None, base(unique_ns, "new", "a")),
            ],
        )
    assert raised.value.key == store.key(unique_ns, "moved")
    created = await store.require(unique_ns, "new")
    assert int(created.metadata.resource_version or 0) > revision, "written though another write lost"
    assert (await store.require(unique_ns, "moved")).spec.feeds[0].name == "b"
    assert (await js.stream_info(f"KV_{store.info.bucket}")).state.last_seq == revision + 1, "only 'new' written"

    again = await ensure_all(store, [(same, base(unique_ns, "same", "a")), (created, base(unique_ns, "new", "a"))])
    assert [outcome for _, outcome in again] == [Outcome.UNCHANGED, Outcome.UNCHANGED]

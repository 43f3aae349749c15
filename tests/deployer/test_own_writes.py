"""A converge's own writes do not queue its Subscription again; anyone else's write meanwhile does.

The deployer's informers hear the echo of every Base and Description it writes. Queuing the
Subscription for those echoes ran a second converge after every rollout that found nothing to do
(seconds at 10,000 clusters). `Caches.own_writes` notes what is heard while a converge writes and
queues again only for a change that was not one of its writes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Base, Subscription
from clusternet_nats.api.meta import ObjectMeta
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.caches import Caches
from clusternet_nats.store import ObjectStore, object_key
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

from tests.deployer.harness import on_caches


@pytest.fixture
async def caches(nats_server: NatsServer) -> AsyncIterator[tuple[Caches, list[str]]]:
    queued: list[str] = []
    async with on_caches(nats_server.url, "deployer-own-writes", lambda _ctx, made: made, queued.append) as made:
        yield made, queued


def _base(sub: Subscription, name: str, replicas_label: str) -> Base:
    labels = {known.SUBS_UID: sub.metadata.uid or "", known.CREATED_BY: known.DEPLOYER, "rev": replicas_label}
    return Base.new(name, sub.namespace, metadata=ObjectMeta(labels=labels), spec={"feeds": []})


async def test_own_writes_are_not_queued_and_another_writer_is(
    caches: tuple[Caches, list[str]], js: JetStreamContext, unique_ns: str
) -> None:
    cache, queued = caches
    subs: ObjectStore[Subscription] = ObjectStore(js, KindInfo.of(Subscription))
    bases: ObjectStore[Base] = ObjectStore(js, KindInfo.of(Base))
    sub = await subs.create(
        Subscription.new("app", unique_ns, spec={"subscribers": [{"clusterAffinity": {}}], "feeds": []})
    )
    sub_key = object_key(sub.namespace, sub.name)
    await eventually(lambda: cache.subscriptions.get(sub_key) is not None, what="the Subscription is cached")
    queued.clear()

    # The converge's own write: its echo heard inside the window, then learned as reconciler does.
    with cache.own_writes(sub_key) as writes:
        mine = await bases.create(_base(sub, "mine", "1"))
        await eventually(lambda: bases.key_of(mine) in writes.heard, what="the echo of our own write")
        writes.written[bases.key_of(mine)] = mine.metadata.resource_version
        cache.bases.learn(bases.key_of(mine), mine, int(mine.metadata.resource_version or 0))
    assert sub_key not in queued, "its own write queued the Subscription again"

    # Another writer changes a Base while the converge writes: queued once the window closes.
    with cache.own_writes(sub_key) as writes:
        theirs = await bases.update(_base(sub, "mine", "2"), mine)
        await eventually(lambda: writes.heard.get(bases.key_of(mine)) == theirs.metadata.resource_version)
        assert sub_key not in queued, "nothing is queued while the converge writes"
    assert queued.count(sub_key) == 1

    # Outside a window every change queues at once.
    queued.clear()
    await bases.delete(sub.namespace, "mine")
    await eventually(lambda: sub_key in queued, what="a deletion queues the Subscription")

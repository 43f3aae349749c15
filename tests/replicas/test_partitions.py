"""Partition leases on a real nats-server: replicas share keys, take over a dead one's, hand
extras to a newcomer, and never reconcile one key in two replicas at once.

Each replica is what a service process holds (its own NATS connection, its Partitions, a work
queue gated by them); every reconcile is recorded with its replica and its start and end, and
the recording is checked for two replicas overlapping on one key. A replica "dies" by having its
network link cut (testing/tcplink.py): it stays alive and keeps trying, the worst case for
double work, since it does not know it is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from clusternet_nats.api.subjects import LEASES_BUCKET
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.partitions import Partitions, ReplicaOptions, partition_of
from clusternet_nats.store import WorkQueue
from clusternet_nats.store.kv import JsonBucket
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

PARTITIONS = 16
LEASE = 2.0
KEYS = [f"ns-{i}.sub-{i}" for i in range(64)]


@dataclass
class Handled:
    key: str
    replica: str
    start: float
    end: float = math.inf


@dataclass
class Record:
    """Every reconcile of every replica: the test hook the no-double-work check reads."""

    handled: list[Handled] = field(default_factory=list)

    def overlaps(self) -> list[tuple[Handled, Handled]]:
        by_key: dict[str, list[Handled]] = defaultdict(list)
        for h in self.handled:
            by_key[h.key].append(h)
        found = []
        for runs in by_key.values():
            runs.sort(key=lambda h: h.start)
            for i, a in enumerate(runs):
                found += [(a, b) for b in runs[i + 1 :] if b.replica != a.replica and b.start < a.end]
        return found

    def replicas_since(self, since: float) -> dict[str, set[str]]:
        """Who reconciled each key after `since`."""
        who: dict[str, set[str]] = defaultdict(set)
        for h in self.handled:
            if h.start >= since:
                who[h.key].add(h.replica)
        return who


class Replica:
    def __init__(self, name: str, service: str, server: NatsServer, record: Record) -> None:
        self.name, self.service, self.record = name, service, record
        self.link = TcpLink("127.0.0.1", server.port)
        self.options = ReplicaOptions(replica_id=name, partitions=PARTITIONS, lease_duration=LEASE)
        self.conn = Connection(self.link.url, f"replica-{name}")
        self.queue = WorkQueue(f"test-{name}", self.reconcile, workers=4)
        self.partitions: Partitions | None = None

    async def reconcile(self, key: str) -> None:
        handled = Handled(key, self.name, time.monotonic())
        self.record.handled.append(handled)
        try:
            await asyncio.sleep(0.02)  # the work a reconcile does (a few KV round trips)
        finally:
            handled.end = time.monotonic()

    async def start(self) -> Replica:
        await self.link.restore()
        nc = await self.conn.connect(timeout=10)
        self.partitions = Partitions(nc, nc.jetstream(), self.service, self.options)
        self.partitions.attach(self.queue)
        for key in KEYS:  # what the informers' listing does in every replica
            self.queue.add(key)
        await self.partitions.start()
        self.queue.start()
        return self

    @property
    def owned(self) -> frozenset[int]:
        return self.partitions.owned if self.partitions else frozenset()

    async def stop(self) -> None:
        if self.partitions is not None:
            await asyncio.wait_for(self.partitions.stop(), 15)
        await self.queue.stop()
        with contextlib.suppress(Exception):  # a cut replica's connection is already broken
            await asyncio.wait_for(self.conn.close(), 15)
        await self.link.cut()


class Group:
    """The replicas a test starts (all stopped after it), with their shared record."""

    def __init__(self, server: NatsServer, service: str) -> None:
        self.server, self.service = server, service
        self.record = Record()
        self.members: list[Replica] = []

    async def add(self, *names: str) -> list[Replica]:
        """Starts replicas together, as processes started at once would."""
        made = [Replica(name, self.service, self.server, self.record) for name in names]
        self.members += made
        await asyncio.gather(*(r.start() for r in made))
        return made


@pytest.fixture
async def group(nats_server: NatsServer, js: JetStreamContext, unique_ns: str) -> AsyncIterator[Group]:
    """`js` made the buckets; the service name is the test's own, so tests share no leases."""
    made = Group(nats_server, unique_ns)
    yield made
    for replica in made.members:
        await replica.stop()


def add_everywhere(group: list[Replica]) -> None:
    """A change of every key, as every replica's informer would see it."""
    for replica in group:
        for key in KEYS:
            replica.queue.add(key)


async def test_one_replica_takes_every_partition_at_start(group: Group) -> None:
    [alone] = await group.add("alone")
    assert alone.owned == frozenset(range(PARTITIONS))  # no lease to wait for
    await eventually(lambda: {h.key for h in group.record.handled} == set(KEYS), what="every key reconciled")


async def test_replicas_share_take_over_and_never_overlap(group: Group) -> None:
    replicas, record = await group.add("a", "b", "c"), group.record
    share = math.ceil(PARTITIONS / 3)

    def balanced() -> bool:
        counts = [len(r.owned) for r in replicas]
        return sum(counts) == PARTITIONS and all(0 < c <= share for c in counts)

    await eventually(balanced, timeout=20, what="16 partitions spread over 3 replicas")
    assert not set.intersection(*(set(r.owned) for r in replicas))

    victim, survivors = replicas[0], replicas[1:]
    victim_partitions = set(victim.owned)
    churned_at = time.monotonic()
    churn = asyncio.create_task(keep_changing(replicas))
    try:
        await eventually(
            lambda: {h.replica for h in record.handled if h.start >= churned_at} == {r.name for r in replicas},
            timeout=20,
            what="work running in all three replicas before the cut",
        )
        await victim.link.cut()
        await eventually(lambda: held_once(survivors), timeout=30, what="the survivors hold every partition once")
        taken_at = time.monotonic()
        await eventually(
            lambda: all(
                survivors_handled(record, taken_at, key, {r.name for r in survivors})
                for key in KEYS
                if partition_of(key, PARTITIONS) in victim_partitions
            ),
            timeout=30,
            what="every key of the victim's partitions reconciled by a survivor",
        )
    finally:
        churn.cancel()
    assert victim.owned == frozenset(), "the cut replica still believes it holds partitions"
    assert record.overlaps() == [], "a key was reconciled by two replicas at once"


def held_once(replicas: list[Replica]) -> bool:
    """Every partition held, and by one replica only (a count alone hides one held twice)."""
    owned = [r.owned for r in replicas]
    return sum(len(o) for o in owned) == PARTITIONS and frozenset().union(*owned) == frozenset(range(PARTITIONS))


def survivors_handled(record: Record, since: float, key: str, survivors: set[str]) -> bool:
    return bool(record.replicas_since(since).get(key, set()) & survivors)


async def keep_changing(group: list[Replica]) -> None:
    """Changes every key in every replica ten times a second (pacing, not synchronisation)."""
    while True:
        add_everywhere(group)
        await asyncio.sleep(0.1)


async def test_extras_are_released_to_a_newcomer(group: Group) -> None:
    [first], record = await group.add("first"), group.record
    assert len(first.owned) == PARTITIONS
    churn = asyncio.create_task(keep_changing(group.members))
    try:
        [newcomer] = await group.add("newcomer")
        joined_at = time.monotonic()
        await eventually(
            lambda: len(first.owned) == len(newcomer.owned) == PARTITIONS // 2,
            timeout=20,
            what="the first replica released half its partitions to the newcomer",
        )
        await eventually(
            lambda: any("newcomer" in who for who in record.replicas_since(joined_at).values()),
            what="the newcomer reconciles keys",
        )
    finally:
        churn.cancel()
    assert not first.owned & newcomer.owned
    assert record.overlaps() == [], "a key was reconciled by two replicas at once"


async def test_a_replica_stopping_cleanly_hands_over_its_leases(
    group: Group, js: JetStreamContext, unique_ns: str
) -> None:
    """SIGTERM deletes the leaving replica's keys, so the other takes its partitions as free ones
    (at its next balance) instead of waiting a lease for a dead holder."""
    leaving, staying = await group.add("leaving", "staying")
    await eventually(lambda: len(staying.owned) == PARTITIONS // 2, timeout=20, what="shared")
    assert leaving.partitions is not None
    await leaving.partitions.stop()
    leaving.partitions = None
    entries = await JsonBucket(js, LEASES_BUCKET).entries(f"{unique_ns}.>")
    left = [key for key, value, _ in entries if "leaving" in key or value.startswith(b"leaving/")]
    assert left == [], "the leaving replica left leases behind"
    await eventually(lambda: len(staying.owned) == PARTITIONS, timeout=20, what="all taken by the one staying")
    assert group.record.overlaps() == []


async def test_a_replica_stopped_while_taking_a_partition_deletes_the_key_it_wrote(
    group: Group, js: JetStreamContext, unique_ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A take whose write landed but whose answer had not come back when SIGTERM arrived: the
    stop lets it be recorded and deletes it, rather than leave the key naming the stopped replica
    for a lease."""
    taker, giver = await group.add("taker", "giver")
    await eventually(lambda: len(taker.owned) == PARTITIONS // 2, timeout=20, what="shared")
    landed, answered = asyncio.Event(), asyncio.Event()
    create = JsonBucket.create

    async def late_answer(bucket: JsonBucket, key: str, data: bytes) -> int:
        revision = await create(bucket, key, data)
        if data.startswith(b"taker/"):
            landed.set()
            await answered.wait()
        return revision

    monkeypatch.setattr(JsonBucket, "create", late_answer)
    assert giver.partitions is not None and taker.partitions is not None
    await giver.partitions.stop()  # its partitions are free: the taker creates their keys
    giver.partitions = None
    await asyncio.wait_for(landed.wait(), 20)
    partitions = taker.partitions
    stopping = asyncio.create_task(partitions.stop())
    # The answer comes once the stop has begun, its cancellation of the take already sent.
    await eventually(lambda: partitions._stopping, timeout=5, what="the stop begun")
    answered.set()
    await asyncio.wait_for(stopping, 20)
    taker.partitions = None
    entries = await JsonBucket(js, LEASES_BUCKET).entries(f"{unique_ns}.>")
    assert entries == [], "a stopped replica left leases behind"


async def test_a_replica_cut_off_briefly_stops_then_gets_its_share_again(group: Group) -> None:
    """Cut off long enough to miss its renew deadline, it stops working at once; back, it either
    renews (nobody took its partitions) or finds itself buried and joins again: either way the
    three end balanced and no key was reconciled twice at once."""
    replicas, share = await group.add("x", "y", "z"), math.ceil(PARTITIONS / 3)

    def balanced() -> bool:
        counts = [len(r.owned) for r in replicas]
        return sum(counts) == PARTITIONS and all(0 < c <= share for c in counts)

    await eventually(balanced, timeout=20, what="spread over 3 replicas")
    churn = asyncio.create_task(keep_changing(replicas))
    try:
        await replicas[0].link.cut()
        await eventually(lambda: not replicas[0].owned, timeout=10, what="the cut replica stops working")
        await replicas[0].link.restore()
        await eventually(balanced, timeout=30, what="balanced again with the replica back")
    finally:
        churn.cancel()
    assert group.record.overlaps() == [], "a key was reconciled by two replicas at once"


async def test_keys_that_arrive_past_the_renew_deadline_are_worked_on_once_renewed(group: Group) -> None:
    """A loaded machine can delay renewals past the deadline without the renew loop noticing in
    time: keys added meanwhile are kept aside, and must be queued again once renewed."""
    [alone] = await group.add("stalled")
    await eventually(lambda: {h.key for h in group.record.handled} == set(KEYS), what="every key reconciled")
    time.sleep(LEASE * 0.75)  # noqa: ASYNC251 - the condition under test: the loop stalls past the deadline
    assert not alone.owned
    alone.queue.add("late.key")  # arrives while this replica may not work on anything
    await eventually(lambda: "late.key" in {h.key for h in group.record.handled}, 10, what="the late key reconciled")


async def test_a_claim_fails_when_a_rival_took_the_partition_after_its_holder_was_judged(
    group: Group, js: JetStreamContext, unique_ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition of a dead holder is judged free, then a rival's claim of it lands (and is seen)
    before ours is written: ours must be conditioned on the revision that was judged, and fail,
    not overwrite the rival's fresh claim (seen in CI as two replicas holding one partition)."""
    contested = 5
    key = f"{unique_ns}.partitions.{contested}"
    bucket = JsonBucket(js, LEASES_BUCKET)
    await bucket.create(key, b"gone/0")  # a holder with no member key: dead
    rival_revision = 0
    claim = Partitions._claim

    async def rival_first(self: Partitions, p: int, *args: object) -> bool:
        nonlocal rival_revision
        if p == contested and not rival_revision:
            rival_revision = await bucket.write(key, b"rival/1", self.leases.revision(key))
            await eventually(lambda: self.leases.revision(key) == rival_revision, what="the rival's claim seen")
        return await claim(self, p, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Partitions, "_claim", rival_first)
    [taker] = await group.add("taker")
    assert taker.partitions is not None
    # Read at once, before its next balance: the rival's claim stands and the taker did not take it.
    assert (contested in taker.owned, taker.partitions.leases.get(key)) == (False, "rival/1")
    assert rival_revision and taker.owned == frozenset(range(PARTITIONS)) - {contested}


async def test_a_replica_whose_partition_key_was_overwritten_lets_that_partition_go(
    group: Group, js: JetStreamContext, unique_ns: str
) -> None:
    x, y = await group.add("x", "y")
    await eventually(lambda: held_once([x, y]) and len(x.owned) == PARTITIONS // 2, timeout=20, what="shared")
    assert x.partitions is not None and y.partitions is not None
    lost = min(x.owned)
    key = f"{unique_ns}.partitions.{lost}"
    bucket = JsonBucket(js, LEASES_BUCKET)
    current = await bucket.get(key)
    assert current is not None and current[0] == x.partitions.me.encode()
    await bucket.write(key, y.partitions.me.encode(), current[1])  # as a claim over x's would
    await eventually(lambda: lost not in x.owned, timeout=10, what="x let go of the overwritten partition")
    await eventually(lambda: held_once([x, y]), timeout=20, what="every partition held once again")
    entries = await bucket.entries(f"{unique_ns}.partitions.>")
    named = {int(k.rsplit(".", 1)[1]): v.decode() for k, v, _ in entries}
    assert named == {p: r.partitions.me for r in (x, y) if r.partitions for p in r.owned}

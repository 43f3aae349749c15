"""Replicas of a hub-side service share its keys: a fixed number of partitions, each held by
one live replica at a time, through leases in the `leases` KV bucket.

Why partitions of keys (and not a JetStream consumer group): the work is level-triggered
reconciles of keys read from informer caches, not messages to consume; what must be shared is
who reconciles key K, exclusively, and a partition taken over must be re-read from the cache.

* A key's partition is crc32(key) mod `partitions` (the same in every process, unlike hash()).
* Each replica keeps a member key `<service>.members.<replica id>` holding its incarnation
  (`<replica id>/<nonce>`), renewed every lease/5 seconds by compare-and-set on its own last
  revision. That is its lease.
* A partition key `<service>.partitions.<n>` names its holder's incarnation; it is taken by
  compare-and-set (create, or update of the revision at which its holder was judged dead, read
  in the same step as the holder) and released by a compare-and-set delete, so one write wins
  when two replicas reach for the same partition. At each balance a replica matches what it
  holds with the keys it sees (`_match_keys`): an overwritten key's partition is let go, and a
  key naming it whose claim's answer was lost is taken up.
* A replica counts another as dead when that one's member key has not changed for a whole
  `lease_duration` by its own clock (as Kubernetes' leader election measures: clocks need not
  agree). Before taking a dead replica's partitions it deletes that member key by compare-and-set
  on the revision it saw: had the replica renewed meanwhile, the delete fails and nothing is
  taken; once it succeeds, the replica's next renewal fails and it knows it lost everything.
* A replica works on a key only while it holds the key's partition and its last successful
  renewal was sent less than `renew_deadline` (0.6 x lease) ago; past that it lets go of
  everything at once, cancelling running reconciles. The others wait a whole lease after the
  last renewal they saw, so it has stopped before anyone takes over, and no key is reconciled
  by two replicas at once (unless an event loop stalls for longer than a lease).
* Balance: live members are those whose member key changed within a lease; each replica holds at
  most ceil(partitions / live members), releases its extras (after their running reconciles
  finish) so a newcomer gets its share, and takes free partitions or dead replicas' up to that.
  Taking a partition queues every key of it the replica had seen while another owned it
  (`WorkQueue.take_owned`), so nothing the dead replica left half-done is left behind.
* A replica stopping cleanly (SIGTERM) releases its partitions and member key, so the others take
  them at their next balance (about a second) instead of after a lease. One replica alone takes
  every partition at start, without waiting; started again after a crash under a new replica id,
  it waits one lease for the dead incarnation (under the same `--replica-id` it takes over at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import secrets
import socket
import time
import zlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import nats.errors
import structlog
from clusternet_nats.api.subjects import LEASES_BUCKET
from clusternet_nats.store.cancelling import cancel_and_wait
from clusternet_nats.store.errors import AlreadyExistsError, ConflictError
from clusternet_nats.store.informer import Informer
from clusternet_nats.store.kv import JsonBucket
from clusternet_nats.store.workqueue import WorkQueue
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

DEFAULT_PARTITIONS = 32
DEFAULT_LEASE_DURATION = 5.0
_REPLICA_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

log = structlog.get_logger(__name__)
T = TypeVar("T")


def default_replica_id() -> str:
    """The host name (a pod's name on Kubernetes) and a random suffix: unique per process."""
    host = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname())[:48] or "replica"
    return f"{host}-{secrets.token_hex(3)}"


def partition_of(key: str, partitions: int) -> int:
    return zlib.crc32(key.encode()) % partitions


@dataclass(frozen=True)
class ReplicaOptions:
    """How replicas of one service share its keys (`--replica-id`, `--partitions`, `--lease-duration`)."""

    replica_id: str = field(default_factory=default_replica_id)
    """Unique among the live replicas of the service; a replica restarted under the same id takes
    over its dead incarnation's partitions at once."""
    partitions: int = DEFAULT_PARTITIONS
    """The same for every replica of a service; more partitions than replicas spread keys evenly."""
    lease_duration: float = DEFAULT_LEASE_DURATION
    """How long a replica that stopped renewing keeps its partitions: the takeover time."""

    def check(self) -> None:
        """Raises ValueError naming the flag."""
        if not _REPLICA_ID.match(self.replica_id):
            raise ValueError(
                f"--replica-id {self.replica_id!r}: 1 to 64 letters, digits, '-' or '_' (it is part of a KV key)"
            )
        if not 1 <= self.partitions <= 4096:
            raise ValueError(f"--partitions {self.partitions}: must be between 1 and 4096")
        if not 0.5 <= self.lease_duration <= 300:
            raise ValueError(f"--lease-duration {self.lease_duration}: must be between 0.5 and 300 seconds")

    @property
    def renew_interval(self) -> float:
        return self.lease_duration / 5

    @property
    def renew_deadline(self) -> float:
        """A replica stops working this long after its last successful renewal was sent."""
        return self.lease_duration * 0.6


class Partitions:
    """One replica's share of one service's partitions; gates the service's work queues."""

    def __init__(self, nc: NATS, js: JetStreamContext, service: str, options: ReplicaOptions) -> None:
        self.service, self.options = service, options
        self.me = f"{options.replica_id}/{secrets.token_hex(4)}"
        """This incarnation, as member and partition keys name it."""
        self._bucket = JsonBucket(js, LEASES_BUCKET)
        self._members = f"{service}.members."
        self._member_key = self._members + options.replica_id
        self._partition_prefix = f"{service}.partitions."
        self.leases: Informer[str] = Informer(
            nc, js, LEASES_BUCKET, lambda _key, data, _rev: data.decode(), key_filter=f"{service}.>"
        )
        self.leases.add_handler(self._observed)
        self._seen: dict[str, tuple[int, float]] = {}
        """Each lease key's revision and when (our clock) we first saw that revision."""
        self._member_rev = 0
        self._renewed_at: float | None = None
        """When the last successful renewal was sent (time.monotonic)."""
        self._lapsed = False
        self._owned: dict[int, int] = {}
        """Partitions held, with the revision of our write of their key."""
        self._releasing: dict[int, int] = {}
        """Partitions let go of whose keys are not deleted yet (a stop deletes them too)."""
        self._given_up: dict[int, int] = {}
        """The revision of our last write of each partition we released or lost: a key still
        naming us at that revision is not ours to take back (see `_match_keys`)."""
        self._stopping = False
        self._queues: list[WorkQueue] = []
        self._loops: list[asyncio.Task[None]] = []
        self._log = log.bind(service=service, replica=options.replica_id)

    # -- what the queues ask ---------------------------------------------------------------

    def attach(self, queue: WorkQueue) -> None:
        queue.share(self.owns)
        self._queues.append(queue)

    def owns(self, key: str) -> bool:
        return self._fresh() and partition_of(key, self.options.partitions) in self._owned

    @property
    def owned(self) -> frozenset[int]:
        return frozenset(self._owned) if self._fresh() else frozenset()

    def _fresh(self) -> bool:
        renewed = self._renewed_at
        return renewed is not None and time.monotonic() - renewed < self.options.renew_deadline

    # -- running ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Joins and takes this replica's share before returning (all of them when alone)."""
        await self.leases.start()
        await self.leases.wait_synced()
        await self._renew()
        await self._step(self._balance)
        # Two tasks, not one gather: a cancelled gather ends with its first child, and the stop
        # must wait for both (a take's write finishing) before it lists what to delete.
        self._loops = [asyncio.create_task(self._every(step)) for step in (self._renew_and_check, self._balance)]

    async def stop(self) -> None:
        """Hands everything back: running reconciles finish (bounded), then the keys are deleted."""
        self._stopping = True
        await cancel_and_wait(self._loops)
        self._loops = []
        held = {**self._releasing, **self._owned}
        self._owned.clear()
        await self._let_go(self.options.renew_deadline)
        with contextlib.suppress(Exception):
            await self._release_keys(held)
            if self._member_rev:
                await self._bucket.delete(self._member_key, self._member_rev)
        self._log.info("partitions.left", released=len(held))
        await self.leases.stop()

    async def _every(self, step: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(self.options.renew_interval)
            await self._step(step)

    async def _landed(self, write: Coroutine[Any, Any, T]) -> T:
        """Awaits a lease write that records what it wrote. Cancelled by `stop` mid-write, the write
        is left to land and be recorded (for up to the renew deadline, through `cancel_and_wait`'s
        repeated cancellations), so the stop deletes the key instead of leaving it naming this
        replica for a lease; cancelled otherwise (a renewal's timeout), the write is cancelled too."""
        task = asyncio.ensure_future(write)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.options.renew_deadline
            while self._stopping and not task.done() and loop.time() < deadline:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([task], timeout=deadline - loop.time())
            await cancel_and_wait([task])
            raise

    async def _step(self, step: Callable[[], Awaitable[None]]) -> None:
        """A failed step (NATS away or electing a leader, a lost race) is logged and tried again
        at the next one: it must not stop the loop, nor the service at its start."""
        try:
            await step()
        except Exception as err:
            self._log.info("partitions.step_failed", step=step.__name__, error=repr(err))

    # -- the lease -------------------------------------------------------------------------

    def _observed(self, key: str, value: str | None) -> None:
        if value is None:
            self._seen.pop(key, None)
            return
        revision = self.leases.revision(key)
        if self._seen.get(key, (0, 0.0))[0] != revision:
            self._seen[key] = (revision, time.monotonic())

    async def _renew_and_check(self) -> None:
        await self._renew()
        if self._owned and not self._fresh() and not self._lapsed:
            self._lapsed = True
            self._log.warning("partitions.lapsed", held=len(self._owned), deadline=self.options.renew_deadline)
            await self._let_go(0)

    async def _renew(self) -> None:
        sent = time.monotonic()
        was_fresh = self._fresh()
        data = self.me.encode()
        # A renewal may take until the deadline (a loaded machine, NATS electing a leader).
        timeout = max(self.options.renew_interval, (self._renewed_at or sent) + self.options.renew_deadline - sent)
        try:
            async with asyncio.timeout(timeout):
                revision = await self._landed(self._write_member(data))
        except ConflictError:
            current = await self._bucket.get(self._member_key)
            if current is not None and current[0] == data:  # our write landed, its answer did not
                self._member_rev = current[1]
                return
            self._log.warning("partitions.declared_dead", held=len(self._owned))
            self._given_up.update(self._owned)  # the others take these over by compare-and-set
            self._owned.clear()
            self._member_rev, self._renewed_at = 0, None
            await self._let_go(0)
            return
        except (nats.errors.Error, TimeoutError) as err:
            self._log.info("partitions.renew_failed", error=repr(err))
            return
        self._member_rev, self._renewed_at = revision, sent
        if not was_fresh:
            # We could not renew for a while; neither could the others if NATS was away (a stream
            # leader election): each gets a whole lease from now before it counts as dead.
            self._seen = {key: (seen[0], sent) for key, seen in self._seen.items()}
            # Nobody deleted our member key, so nobody took what we hold; keys that arrived
            # while we were past the deadline were kept aside, and are queued again now.
            self._lapsed = False
            if self._owned:
                self._log.info("partitions.renewed_after_lapse", held=len(self._owned))
                self._take_owned()

    async def _write_member(self, data: bytes) -> int:
        if self._member_rev:
            revision = await self._bucket.write(self._member_key, data, self._member_rev)
        else:
            revision = await self._join(data)
        self._member_rev = revision
        return revision

    async def _join(self, data: bytes) -> int:
        try:
            return await self._bucket.create(self._member_key, data)
        except AlreadyExistsError:  # an earlier incarnation under this replica id: it is us
            current = await self._bucket.get(self._member_key)
            return await self._bucket.write(self._member_key, data, current[1] if current else 0)

    # -- balance ---------------------------------------------------------------------------

    async def _balance(self) -> None:
        if not self._fresh():
            return
        await self._match_keys()
        now = time.monotonic()
        members = {k: v for k, v in self.leases.items() if k.startswith(self._members)}
        lease = self.options.lease_duration
        live = {k for k in members if k == self._member_key or now - self._seen.get(k, (0, now))[1] <= lease}
        target = math.ceil(self.options.partitions / max(1, len(live | {self._member_key})))
        if len(self._owned) > target:
            await self._release(sorted(self._owned)[target:])
        elif len(self._owned) < target:
            # Each delete is conditioned on the revision its liveness was judged by, read now: a
            # renewal the informer applies while an earlier delete is awaited must make it fail.
            stale = {k: self.leases.revision(k) for k in members.keys() - live}
            buried = {k for k, revision in stale.items() if await self._bury(k, revision)}
            await self._take(target - len(self._owned), buried)

    async def _bury(self, member_key: str, revision: int) -> bool:
        """Deletes a member key unchanged for a lease, iff still at the revision seen."""
        try:
            await self._bucket.delete(member_key, revision)
        except ConflictError:
            return False
        self._log.info("partitions.member_dead", member=member_key[len(self._members) :])
        return True

    def _holds(self, holder: str, buried: set[str]) -> bool:
        """Whether a partition's holder is alive: its member key, as seen now (a partition key is
        seen after its holder's member key, in stream order), names it and was not just buried."""
        member_key = self._members + holder.split("/", 1)[0]
        return member_key not in buried and self.leases.get(member_key) == holder

    async def _take(self, wanted: int, buried: set[str]) -> None:
        """Takes up to `wanted` partitions that are free or whose holder is dead."""
        count = self.options.partitions
        start = zlib.crc32(self.me.encode()) % count
        gained: list[int] = []
        for p in ((start + i) % count for i in range(count)):
            if len(gained) >= wanted:
                break
            key = self._partition_prefix + str(p)
            # The holder and the revision the claim is conditioned on are read together: a rival's
            # claim applied in between must make ours fail, not be overwritten unjudged.
            holder, seen = self.leases.get(key), self.leases.revision(key)
            if p in self._owned or (holder is not None and holder != self.me and self._holds(holder, buried)):
                continue
            if await self._landed(self._claim(p, holder, seen)):
                gained.append(p)
        if gained:
            self._log.info("partitions.taken", partitions=gained, held=len(self._owned))
            self._take_owned()

    async def _claim(self, p: int, holder: str | None, seen: int) -> bool:
        """Writes partition `p`'s key naming this replica iff it is still at revision `seen`
        (created, when no holder was seen); records it if won."""
        key = self._partition_prefix + str(p)
        try:
            if holder is None:
                revision = await self._bucket.create(key, self.me.encode())
            else:
                revision = await self._bucket.write(key, self.me.encode(), seen)
        except (ConflictError, AlreadyExistsError):
            return False
        self._owned[p] = revision
        return True

    async def _match_keys(self) -> None:
        """Makes what this replica holds agree with the partition keys it sees.

        * A key overwritten (a later revision than our write, naming another incarnation) was
          claimed over ours: working on its keys would work on them twice, so we let go at once.
        * A key naming this incarnation that we do not hold, at a revision later than any we gave
          up, is a claim of ours that landed but whose answer was lost (a timeout): we hold it, or
          it would stay named after a live replica and nobody would work on it.
        """
        lost, found = [], {}
        for p in range(self.options.partitions):
            key = self._partition_prefix + str(p)
            holder, revision = self.leases.get(key), self.leases.revision(key)
            if p in self._owned:
                if revision > self._owned[p] and holder != self.me:
                    lost.append(p)
            elif holder == self.me and revision > self._given_up.get(p, 0):
                found[p] = revision
        for p in lost:
            self._given_up[p] = self._owned.pop(p)
        self._owned.update(found)
        if lost:
            self._log.warning("partitions.overwritten", partitions=lost, held=len(self._owned))
            await self._let_go(0)
        if found:
            self._log.info("partitions.found_ours", partitions=sorted(found), held=len(self._owned))
            self._take_owned()

    async def _release(self, partitions: list[int]) -> None:
        held = {p: self._owned.pop(p) for p in partitions}
        self._releasing.update(held)
        self._given_up.update(held)
        await self._let_go(self.options.renew_deadline)
        await self._release_keys(held)
        self._log.info("partitions.released", partitions=partitions, held=len(self._owned))

    async def _release_keys(self, held: dict[int, int]) -> None:
        for p, revision in held.items():
            with contextlib.suppress(ConflictError):
                await self._bucket.delete(self._partition_prefix + str(p), revision)
            self._releasing.pop(p, None)

    # -- the queues ------------------------------------------------------------------------

    def _take_owned(self) -> None:
        for queue in self._queues:
            queue.take_owned()

    async def _let_go(self, timeout: float) -> None:
        await asyncio.gather(*(queue.let_go(timeout) for queue in self._queues))


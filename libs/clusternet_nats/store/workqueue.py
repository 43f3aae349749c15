"""A de-duplicating work queue of keys with bounded retries, as client-go's workqueue.

A key waiting in the queue is queued once however many events name it; a key being processed
is not processed twice at once; a key added while it is processed is processed again after.
Failures are retried with exponential backoff, and after `max_retries` the key is parked: an
`on_parked` callback (a Warning Event, typically) tells a human, and the next change of the
object brings it back. `reconcile(key)` brings the world in line with the latest state of one
key, and may run for one key many times: it must be idempotent.

A key keeps the trace context it was added in (the informer notifies inside the context of the
change it applied: store/tracecontext.py), and its reconcile runs in a span that is that
context's child; a key added again while waiting takes the newer one.

Replicas of a service share the keys (runtime/partitions.py). Once `share(owns)` is set, a key
this replica does not own is kept aside instead of queued; `take_owned()` queues the kept keys
it now owns, so a partition taken over from a dead replica leaves nothing behind; `let_go()`
puts aside the keys it no longer owns and waits for their running reconciles (cancelling them at
a deadline), so two replicas never reconcile one key at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable

import structlog
from clusternet_nats.store.cancelling import cancel_and_wait
from clusternet_nats.store.tracecontext import carried, span
from opentelemetry.context import Context

log = structlog.get_logger(__name__)


class WorkQueue:
    def __init__(
        self,
        name: str,
        reconcile: Callable[[str], Awaitable[None]],
        workers: int = 4,
        max_retries: int = 8,
        base_delay: float = 0.05,
        max_delay: float = 10.0,
        on_parked: Callable[[str, BaseException], Awaitable[None]] | None = None,
        priority: Callable[[str], int] | None = None,
    ) -> None:
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._max_retries = max_retries
        self._base_delay, self._max_delay = base_delay, max_delay
        self._on_parked = on_parked
        self._priority = priority
        # Entries are (-priority, arrival, key); an entry whose key waits elsewhere now is stale.
        self._queue: asyncio.PriorityQueue[tuple[int, int, str]] = asyncio.PriorityQueue()
        self._arrivals = itertools.count()
        self._queued: dict[str, tuple[int, int]] = {}
        self._active: set[str] = set()
        self._dirty: set[str] = set()
        self._failures: dict[str, int] = {}
        self._retry_timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self._parked: set[str] = set()
        self._contexts: dict[str, Context] = {}
        """The trace context each key was last added in, until it is reconciled."""
        self._owns: Callable[[str], bool] | None = None
        self._deferred: set[str] = set()
        """Keys seen while another replica owned them (`share`), queued when this one takes them."""
        self._running: dict[str, asyncio.Future[None]] = {}
        self._let_go: set[str] = set()
        self._log = log.bind(queue=name)

    def add(self, key: str) -> None:
        self._failures.pop(key, None)
        self._parked.discard(key)
        context = carried()
        if context is not None:
            self._contexts[key] = context
        timer = self._retry_timers.pop(key, None)
        if timer:
            timer.cancel()
        self._enqueue(key)

    def _enqueue(self, key: str) -> None:
        if self._owns is not None and not self._owns(key):
            self._deferred.add(key)
            return
        if key in self._active:
            self._dirty.add(key)
            return
        rank = -self._priority(key) if self._priority is not None else 0
        waiting = self._queued.get(key)
        if waiting is not None and waiting[0] == rank:
            return
        place = (rank, waiting[1] if waiting is not None else next(self._arrivals))
        self._queued[key] = place
        self._idle.clear()
        self._queue.put_nowait((*place, key))

    def share(self, owns: Callable[[str], bool]) -> None:
        """From now on only keys `owns` accepts are worked on; the others wait for `take_owned`."""
        self._owns = owns

    def take_owned(self) -> None:
        """Queues the kept-aside keys this replica owns now (a partition it has just taken)."""
        owns = self._owns
        if owns is None:
            return
        for key in [k for k in self._deferred if owns(k)]:
            self._deferred.discard(key)
            self._enqueue(key)

    async def let_go(self, timeout: float) -> None:
        """Puts aside every key this replica no longer owns: queued, waiting to retry or running
        (their reconciles may finish within `timeout`, then are cancelled), so that when this
        returns none of them is being reconciled here."""
        owns = self._owns
        if owns is None:
            return
        for key in [k for k in self._queued if not owns(k)]:
            del self._queued[key]  # its heap entry is now stale
            self._deferred.add(key)
        for key in [k for k in self._retry_timers if not owns(k)]:
            self._retry_timers.pop(key).cancel()
            self._failures.pop(key, None)
            self._deferred.add(key)
        running = {key: task for key, task in self._running.items() if not owns(key)}
        if running:
            _, late = await asyncio.wait(running.values(), timeout=timeout)
            self._let_go.update(key for key, task in running.items() if task in late)
            if late:
                self._log.warning("workqueue.let_go_cancelled", keys=len(late), timeout=timeout)
                await cancel_and_wait(late)
        self._update_idle()

    def __len__(self) -> int:
        return len(self._queued) + len(self._active) + len(self._retry_timers)

    @property
    def parked(self) -> int:
        """Keys that failed every retry and wait for their next change (`add`)."""
        return len(self._parked)

    async def wait_idle(self) -> None:
        await self._idle.wait()

    def start(self) -> None:
        for i in range(self._workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"{self.name}-worker-{i}"))

    async def stop(self) -> None:
        for timer in self._retry_timers.values():
            timer.cancel()
        await cancel_and_wait(self._tasks)
        self._tasks.clear()

    async def _work(self) -> None:
        while True:
            rank, arrival, key = await self._queue.get()
            if self._queued.get(key) != (rank, arrival):
                continue
            del self._queued[key]
            if self._owns is not None and not self._owns(key):
                self._deferred.add(key)
                self._update_idle()
                continue
            self._active.add(key)
            parent = self._contexts.get(key)
            running = self._running[key] = asyncio.ensure_future(self._traced(key, parent))
            try:
                await running
                self._failures.pop(key, None)
                if self._contexts.get(key) is parent:
                    self._contexts.pop(key, None)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if key not in self._let_go or (current is not None and current.cancelling()):
                    raise
                self._deferred.add(key)  # cancelled by let_go: another replica owns it now
            except Exception as err:
                await self._failed(key, err)
            finally:
                self._let_go.discard(key)
                del self._running[key]
                self._active.discard(key)
                if key in self._dirty:
                    self._dirty.discard(key)
                    self._enqueue(key)
                self._update_idle()

    async def _traced(self, key: str, parent: Context | None) -> None:
        with span("reconcile", parent=parent, attributes={"cnet.queue": self.name, "cnet.key": key}):
            await self._reconcile(key)

    async def _failed(self, key: str, err: Exception) -> None:
        tries = self._failures.get(key, 0) + 1
        self._failures[key] = tries
        if tries > self._max_retries:
            self._failures.pop(key, None)
            self._dirty.discard(key)
            self._contexts.pop(key, None)
            self._parked.add(key)
            self._log.error("workqueue.parked", key=key, tries=tries, error=repr(err))
            if self._on_parked is not None:
                with contextlib.suppress(Exception):
                    await self._on_parked(key, err)
            return
        delay = min(self._base_delay * 2 ** (tries - 1), self._max_delay)
        self._log.info("workqueue.retry", key=key, tries=tries, delay=delay, error=repr(err))
        loop = asyncio.get_running_loop()
        self._retry_timers[key] = loop.call_later(delay, self._retry, key)

    def _retry(self, key: str) -> None:
        self._retry_timers.pop(key, None)
        self._enqueue(key)

    def _update_idle(self) -> None:
        if not self._queued and not self._active and not self._retry_timers:
            self._idle.set()

"""One timer for all clusters: a heap of heartbeat deadlines, never a scan of every cluster.

Checking every cluster on a timer costs clusters x ticks whether or not anything happens. Here
a reconcile (a change of the cluster or its status) pushes the cluster's deadline, and one task
sleeps until the earliest one. A heartbeat pushes nothing: when a deadline comes, the controller
pushes it out to the cluster's new one if it was heard from meanwhile (controller.py), so each
cluster costs one timer event per grace period, and an idle hub sleeps. A cluster keeps only its
latest deadline; older heap entries are dropped when they surface.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable


class Deadlines:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._heap: list[tuple[float, str]] = []
        self._due: dict[str, float] = {}
        self._wake = asyncio.Event()

    def __len__(self) -> int:
        return len(self._due)

    def schedule(self, key: str, when: float) -> None:
        """Fire `key` at `when` (seconds since the epoch), replacing its earlier deadline."""
        if self._due.get(key) == when:
            return
        self._due[key] = when
        heapq.heappush(self._heap, (when, key))
        if self._heap[0] == (when, key):
            self._wake.set()

    def forget(self, key: str) -> None:
        self._due.pop(key, None)

    async def run(self, fire: Callable[[str], None]) -> None:
        """Calls `fire(key)` once each deadline passes; runs until cancelled."""
        while True:
            self._wake.clear()
            now = self._clock()
            while self._heap and (self._heap[0][0] <= now or self._due.get(self._heap[0][1]) != self._heap[0][0]):
                when, key = heapq.heappop(self._heap)
                if self._due.get(key) == when:
                    del self._due[key]
                    fire(key)
            timeout = self._heap[0][0] - now if self._heap else None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()

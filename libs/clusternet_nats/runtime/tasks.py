"""A bounded pool of tasks for request handlers.

nats-py runs one subscription's callbacks one after another, so a responder that awaits the
store would answer one request at a time. Responders (runtime/responder.py) hand each request
to this pool instead: at most `limit` run at once, and the callback waits for a free slot, so
the subscription's own pending limits bound what queues up. With a limit of 1 requests run one
at a time in arrival order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from clusternet_nats.store.cancelling import cancel_and_wait


class TaskPool:
    def __init__(self, limit: int) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._tasks: set[asyncio.Task[None]] = set()
        self.peak = 0
        """The most tasks that ran at once."""

    async def submit(self, work: Coroutine[Any, Any, None]) -> None:
        """Starts `work` once a slot is free."""
        await self._slots.acquire()
        task = asyncio.create_task(work)
        self._tasks.add(task)
        self.peak = max(self.peak, len(self._tasks))
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def cancel(self) -> None:
        """Cancels what runs and waits for it, so nothing outlives its responder's connection."""
        await cancel_and_wait(list(self._tasks))

    def __len__(self) -> int:
        return len(self._tasks)

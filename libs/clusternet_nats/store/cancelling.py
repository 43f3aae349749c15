"""Stopping a task for certain: its cancellation is sent again until it has ended.

On Python 3.11, `asyncio.wait_for` returns the result of an inner future that completed in the
same turn as the cancellation, and drops the cancellation. nats-py awaits every request that
way, so a loop that was cancelled just as a JetStream API reply arrived (an informer making its
consumer again as its owner stops) carried on with its next step, and `await task` after one
`cancel()` never returned: a stress script stopping an informer while it followed a stream made
again hung within 30 stops. Our own code waits with `asyncio.timeout`, which keeps the
cancellation; this is for the awaits inside libraries.

The other side of it: a task's own cleanup (a `finally` that stops what it started) is cut
short by the cancellation sent again, unless it is awaited through `uncancelled`. An agent
stopped while cut off from NATS spent longer than one resend closing its clusters, and left a
cluster's connection dialling for good.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

RESEND = 0.5
"""Seconds between two cancellations of a task that has not ended."""


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]]) -> list[BaseException]:
    """Cancels `tasks` and returns once every one has ended, with what those that failed raised
    (retrieved, so asyncio does not log them as never retrieved; an owner that has no one left
    to tell drops them)."""
    tasks = list(tasks)
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=RESEND)
    raised = (None if task.cancelled() else task.exception() for task in tasks)
    return [error for error in raised if error is not None]


async def uncancelled(cleanup: Awaitable[T]) -> T:
    """Awaits a cleanup to its end though the awaiting task is cancelled (again) meanwhile, then
    raises that cancellation. The cleanup must bound its own time (`runtime.service.bounded`)."""
    task = asyncio.ensure_future(cleanup)
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return task.result()

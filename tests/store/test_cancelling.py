"""A task that drops its first cancellation, as Python 3.11's `asyncio.wait_for` does when the
awaited reply lands in the same turn, is still stopped."""

import asyncio
from collections.abc import Awaitable, Callable

from clusternet_nats.store.cancelling import RESEND, cancel_and_wait, uncancelled


async def started(body: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
    """`body` as a task, returned once it has run up to its first wait."""
    began = asyncio.Event()

    async def run() -> None:
        began.set()
        await body()

    task = asyncio.create_task(run())
    await began.wait()
    return task


async def test_a_task_that_drops_one_cancellation_is_stopped_all_the_same() -> None:
    dropped = asyncio.Event()

    async def swallows_once() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            dropped.set()  # carries on, as wait_for returning a result would
        await asyncio.Event().wait()

    task = await started(swallows_once)
    async with asyncio.timeout(10):
        await cancel_and_wait([task])
    assert dropped.is_set()
    assert task.cancelled()


async def test_what_a_task_raised_is_returned_and_finished_tasks_are_left_as_they_are() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    async def fails_when_cancelled() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("cleaning up failed") from None

    async def waits() -> None:
        await asyncio.Event().wait()

    failed = asyncio.create_task(fails())
    done = asyncio.create_task(asyncio.sleep(0, result=7))
    await asyncio.wait({failed, done})
    stopping, waiting = await started(fails_when_cancelled), await started(waits)
    raised = await cancel_and_wait([failed, done, stopping, waiting])
    assert [type(error) for error in raised] == [ValueError, RuntimeError]
    assert done.result() == 7 and waiting.cancelled()


async def test_a_cleanup_awaited_uncancelled_runs_to_its_end_through_resent_cancellations() -> None:
    """A `finally` that takes longer than one resend still finishes; the task ends cancelled."""
    cleaned = asyncio.Event()

    async def cleanup() -> None:
        await asyncio.sleep(RESEND * 3)  # three resends arrive meanwhile
        cleaned.set()

    async def works_then_cleans_up() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await uncancelled(cleanup())

    task = await started(works_then_cleans_up)
    async with asyncio.timeout(10):
        await cancel_and_wait([task])
    assert cleaned.is_set() and task.cancelled()

"""A task that drops its first cancellation, as Python 3.11's `asyncio.wait_for` does when the
awaited reply lands in the same turn, is still stopped."""

import asyncio

from clusternet_nats.store.cancelling import cancel_and_wait


async def test_a_task_that_drops_one_cancellation_is_stopped_all_the_same() -> None:
    started, dropped = asyncio.Event(), asyncio.Event()

    async def swallows_once() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            dropped.set()  # carries on, as wait_for returning a result would
        await asyncio.Event().wait()

    task = asyncio.create_task(swallows_once())
    await started.wait()
    async with asyncio.timeout(10):
        await cancel_and_wait([task])
    assert dropped.is_set()
    assert task.cancelled()


async def test_what_a_task_raised_is_returned_and_finished_tasks_are_left_as_they_are() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    stopping_started, waiting_started = asyncio.Event(), asyncio.Event()

    async def fails_when_cancelled() -> None:
        stopping_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("cleaning up failed") from None

    async def waits() -> None:
        waiting_started.set()
        await asyncio.Event().wait()

    failed = asyncio.create_task(fails())
    done = asyncio.create_task(asyncio.sleep(0, result=7))
    await asyncio.wait({failed, done})
    stopping = asyncio.create_task(fails_when_cancelled())
    waiting = asyncio.create_task(waits())
    await stopping_started.wait()
    await waiting_started.wait()
    raised = await cancel_and_wait([failed, done, stopping, waiting])
    assert [type(error) for error in raised] == [ValueError, RuntimeError]
    assert done.result() == 7 and waiting.cancelled()

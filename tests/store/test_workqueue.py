"""De-duplication, retries and parking of the work queue."""

import asyncio

from clusternet_nats.store import WorkQueue
from clusternet_nats.testing.waiting import eventually


async def test_a_key_queued_many_times_is_processed_once() -> None:
    calls: list[str] = []
    gate = asyncio.Event()

    async def reconcile(key: str) -> None:
        await gate.wait()
        calls.append(key)

    queue = WorkQueue("t", reconcile, workers=2)
    for _ in range(10):
        queue.add("a")
    queue.add("b")
    queue.start()
    gate.set()
    await asyncio.wait_for(queue.wait_idle(), 5)
    assert sorted(calls) == ["a", "b"]
    await queue.stop()


async def test_a_key_added_while_processing_runs_again_after() -> None:
    calls: list[str] = []
    started = asyncio.Event()
    release = asyncio.Event()

    async def reconcile(key: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            started.set()
            await release.wait()

    queue = WorkQueue("t", reconcile, workers=4)
    queue.start()
    queue.add("a")
    await asyncio.wait_for(started.wait(), 5)
    queue.add("a")
    queue.add("a")
    release.set()
    await eventually(lambda: len(calls) == 2, 5)
    await asyncio.wait_for(queue.wait_idle(), 5)
    assert calls == ["a", "a"], "never concurrently, once more after, not twice more"
    await queue.stop()


async def test_failures_retry_then_park() -> None:
    attempts: list[int] = []
    parked: list[tuple[str, str]] = []

    async def reconcile(_key: str) -> None:
        attempts.append(1)
        raise RuntimeError("boom")

    async def on_parked(key: str, err: BaseException) -> None:
        parked.append((key, str(err)))

    queue = WorkQueue("t", reconcile, max_retries=3, base_delay=0.001, on_parked=on_parked)
    queue.start()
    queue.add("poison")
    await eventually(lambda: parked, 5)
    assert parked == [("poison", "boom")]
    assert len(attempts) == 4
    await asyncio.wait_for(queue.wait_idle(), 5)
    await queue.stop()


async def test_transient_failure_recovers() -> None:
    attempts: list[int] = []

    async def reconcile(_key: str) -> None:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("transient")

    queue = WorkQueue("t", reconcile, base_delay=0.001)
    queue.start()
    queue.add("k")
    await eventually(lambda: len(attempts) == 3, 5)
    await asyncio.wait_for(queue.wait_idle(), 5)
    await queue.stop()

"""The scheduler's queue order: spec.priority first (higher earlier), then arrival, as Clusternet's
scheduling queue (pkg/scheduler/internal/queue, framework.Less)."""

from __future__ import annotations

import asyncio

from clusternet_nats.store import WorkQueue


async def drain(queue: WorkQueue, done: list[str]) -> list[str]:
    queue.start()
    await asyncio.wait_for(queue.wait_idle(), 5)
    await queue.stop()
    return done


async def test_higher_priority_first_then_arrival_order() -> None:
    priorities = {"low": 0, "high": 10, "mid": 5, "high-later": 10, "none": 0}
    done: list[str] = []

    async def reconcile(key: str) -> None:
        done.append(key)

    queue = WorkQueue("t", reconcile, workers=1, priority=priorities.__getitem__)
    for key in ("low", "high", "mid", "none", "high-later"):
        queue.add(key)
    assert await drain(queue, done) == ["high", "high-later", "mid", "low", "none"]


async def test_a_waiting_key_whose_priority_changes_moves_and_keeps_its_time() -> None:
    priorities = {"a": 0, "b": 0, "c": 0}
    done: list[str] = []

    async def reconcile(key: str) -> None:
        done.append(key)

    queue = WorkQueue("t", reconcile, workers=1, priority=priorities.__getitem__)
    for key in "abc":
        queue.add(key)
    priorities["c"] = 3
    queue.add("c")
    priorities["a"] = 3
    queue.add("a")
    assert await drain(queue, done) == ["a", "c", "b"], "raised keys first, in their first arrival order"
    assert len(queue) == 0


async def test_without_priority_the_queue_is_fifo() -> None:
    done: list[str] = []

    async def reconcile(key: str) -> None:
        done.append(key)

    queue = WorkQueue("t", reconcile, workers=1)
    for key in ("z", "a", "m", "a"):
        queue.add(key)
    assert await drain(queue, done) == ["z", "a", "m"]

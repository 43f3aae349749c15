"""The one-timer deadline heap: each key fires once, at its latest deadline, in time order."""

from __future__ import annotations

import asyncio
import contextlib
import time

from clusternet_nats.hub.clusterhealth.deadlines import Deadlines
from clusternet_nats.testing.waiting import eventually


async def test_latest_deadline_wins_and_keys_fire_in_order() -> None:
    deadlines = Deadlines()
    fired: list[str] = []
    task = asyncio.create_task(deadlines.run(fired.append))
    try:
        now = time.time()
        deadlines.schedule("late", now + 0.3)
        deadlines.schedule("moved", now + 0.05)
        deadlines.schedule("moved", now + 0.6)  # a heartbeat pushed it out: the early entry is stale
        deadlines.schedule("early", now + 0.1)
        deadlines.schedule("forgotten", now + 0.05)
        deadlines.forget("forgotten")
        await eventually(lambda: len(fired) == 3, 5, what="three deadlines fired")
        assert fired == ["early", "late", "moved"]
        assert len(deadlines) == 0
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

"""A long loop that breathes lets other tasks run (a lease renewal, acks) while it goes on."""

from __future__ import annotations

import asyncio

from clusternet_nats.store.breathe import EVERY, breathe


async def test_a_long_loop_gives_other_tasks_turns_while_it_runs() -> None:
    turns: list[int] = []
    progress = 0

    started = asyncio.Event()

    async def other() -> None:
        started.set()
        while True:
            turns.append(progress)
            await asyncio.sleep(0)

    watcher = asyncio.create_task(other())
    await started.wait()
    for index in range(EVERY * 4):
        progress = index
        await breathe(index)
    watcher.cancel()
    seen_midway = [at for at in turns if 0 < at < EVERY * 4 - 1]
    assert len(seen_midway) >= 3, turns

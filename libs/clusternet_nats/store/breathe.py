"""Long loops over a fleet give the event loop its turn now and then.

A converge or a status pass over 10,000 clusters that never awaits anything which suspends holds
the loop for seconds: the lease renewal (runtime/partitions.py) and the acks of the writes in
flight wait behind it, and under a loaded machine the replica's partitions lapsed mid-rollout,
cancelling the very pass that was about to finish. Yielding every few hundred items costs
microseconds and keeps the loop's latency at milliseconds.
"""

from __future__ import annotations

import asyncio

EVERY = 256
"""Items a loop handles between two turns it gives the event loop."""


async def breathe(index: int) -> None:
    """Gives the event loop a turn once every `EVERY` items (`index` counts from 0)."""
    if index % EVERY == EVERY - 1:
        await asyncio.sleep(0)

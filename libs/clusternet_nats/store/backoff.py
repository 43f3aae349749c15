"""Waiting before trying again: exponential, capped, with full jitter, as client-go's and OCM's agents do.

A fleet refused at one moment (the hub restarting, its auth callout behind, a registration or a
consumer creation timing out) must not come back at one moment, nor at any fixed pace: each wait is drawn uniformly from
[0, min(cap, base * 2**attempt)] ("full jitter"), so the retries of many clients spread over the
window, and the window, hence the load they put on the hub, grows with every failure until `cap`.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

_MAX_EXPONENT = 32
"""Far past any cap in use; keeps 2**attempt a small float however long the failures go on."""
_SHARED = random.Random()
"""One generator for the process, seeded once from the OS: seeding one per Backoff (a process of
simulated clusters makes five a registration) reads 2.5 KB of urandom each time."""


@dataclass
class Backoff:
    base: float = 0.1
    """The first window, seconds."""
    cap: float = 30.0
    """The largest window, seconds."""
    attempt: int = 0
    """Failures since the last success (`reset`)."""
    _random: random.Random = field(default=_SHARED, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.base <= self.cap:
            raise ValueError(f"backoff: base {self.base} must be positive and at most cap {self.cap}")

    @property
    def window(self) -> float:
        """The longest the next wait may be."""
        return min(self.cap, self.base * 2.0 ** min(self.attempt, _MAX_EXPONENT))

    def next_delay(self) -> float:
        """The wait after one more failure."""
        delay = self._random.uniform(0, self.window)
        self.attempt += 1
        return delay

    async def wait(self, deadline: float | None = None) -> None:
        """Sleeps the next delay, or until `deadline` (the loop's clock) if that comes first."""
        delay = self.next_delay()
        if deadline is not None:
            delay = max(0.0, min(delay, deadline - asyncio.get_running_loop().time()))
        await asyncio.sleep(delay)

    def reset(self) -> None:
        self.attempt = 0

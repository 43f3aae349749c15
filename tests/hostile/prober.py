"""A concurrent prober of `/healthz`: the slowest answer while an attack ran, measured, not slept."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import aiohttp


class Prober:
    def __init__(self) -> None:
        self.slowest = 0.0
        self.answers = 0


@contextlib.asynccontextmanager
async def probing(http: aiohttp.ClientSession) -> AsyncIterator[Prober]:
    """Asks `/healthz` back to back while the block runs; `slowest` is the longest wait for an answer
    (a hub whose event loop is stalled answers late, however the attack is written)."""
    prober = Prober()

    async def probe() -> None:
        while True:
            started = time.monotonic()
            async with http.get("/healthz") as resp:
                assert resp.status == 200
                await resp.read()
            prober.slowest = max(prober.slowest, time.monotonic() - started)
            prober.answers += 1
            await asyncio.sleep(0.02)  # pacing between probes, not synchronisation

    task = asyncio.create_task(probe())
    try:
        yield prober
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert prober.answers > 0, "the prober never got an answer"

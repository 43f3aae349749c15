"""Every service's probes, the hub's included, come from one implementation with one policy.

Liveness stays 200 while NATS is away (the client reconnects by itself; a restart would only add
an outage), readiness drops to 503 until NATS is back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from clusternet_nats.runtime.service import CommonOptions, ServiceContext, serve
from clusternet_nats.testing.natsserver import NatsServer, free_port
from clusternet_nats.testing.waiting import eventually


async def _status(session: aiohttp.ClientSession, url: str) -> int:
    try:
        async with session.get(url) as resp:
            return resp.status
    except aiohttp.ClientError:
        return -1


def _answers(session: aiohttp.ClientSession, url: str, code: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await _status(session, url) == code

    return check


@pytest.fixture
async def probed(private_nats: NatsServer) -> AsyncIterator[str]:
    port = free_port()
    stop = asyncio.Event()

    async def build(ctx: ServiceContext) -> None:
        return None

    options = CommonOptions(nats_url=private_nats.url, health_port=port)
    task = asyncio.create_task(serve("probe-test", options, build, stop))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def test_liveness_holds_and_readiness_follows_nats(private_nats: NatsServer, probed: str) -> None:
    async with aiohttp.ClientSession() as session:
        await eventually(_answers(session, probed + "/readyz", 200), what="ready at start")
        assert await _status(session, probed + "/healthz") == 200
        async with session.get(probed + "/metrics") as resp:
            assert "cnet_nats_connected 1" in await resp.text()

        private_nats.stop()
        await eventually(_answers(session, probed + "/readyz", 503), what="not ready without NATS")
        assert await _status(session, probed + "/healthz") == 200
        assert await _status(session, probed + "/livez") == 200

        private_nats.start()
        await eventually(_answers(session, probed + "/readyz", 200), timeout=30, what="ready again")

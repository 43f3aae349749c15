"""One in-process hub for the module's tests; tests keep apart by namespace (`unique_ns`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.testing.natsserver import NatsServer


@pytest.fixture(scope="module")
async def hub_url(nats_server: NatsServer) -> AsyncIterator[str]:
    async with running_hub(nats_server.url) as url:
        yield url


@pytest.fixture
async def http(hub_url: str) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=hub_url) as session:
        yield session

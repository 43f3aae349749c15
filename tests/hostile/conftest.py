"""One in-process hub for the hostile-input tests, an admin session to it, and a prober of `/healthz`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer


@pytest.fixture(scope="module")
async def served_hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url) as hub:
        yield hub


@pytest.fixture
async def http(served_hub: ServedHub) -> AsyncIterator[aiohttp.ClientSession]:
    async with served_hub.session() as session:
        yield session

"""One in-process hub for the module's tests, with a user bound to no role at all."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer

NOBODY = "nora-nobody"


@pytest.fixture(scope="module")
async def served_hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url, users={NOBODY: []}, policy={"bindings": []}) as hub:
        yield hub


@pytest.fixture
async def http(served_hub: ServedHub) -> AsyncIterator[aiohttp.ClientSession]:
    async with served_hub.session() as session:
        yield session


async def get_json(http: aiohttp.ClientSession, path: str) -> Any:
    """GET path, which must answer 200, as JSON."""
    async with http.get(path) as resp:
        assert resp.status == 200, (path, await resp.text())
        return await resp.json()

"""An in-process hub for the CLI's integration tests, and a way to run `cnet` beside it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from clusternet_nats.cli.main import app
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.testing.natsserver import NatsServer
from typer.testing import CliRunner, Result

Cnet = Callable[..., Awaitable[Result]]


@pytest.fixture(scope="module")
async def hub_url(nats_server: NatsServer) -> AsyncIterator[str]:
    async with running_hub(nats_server.url) as url:
        yield url


@pytest.fixture
def cnet(hub_url: str) -> Cnet:
    """Runs `cnet --server <hub> ARGS...` in a thread: its asyncio.run must not block the hub's loop."""

    async def run(*args: str) -> Result:
        return await asyncio.to_thread(lambda: CliRunner().invoke(app, ["--server", hub_url, *args]))

    return run

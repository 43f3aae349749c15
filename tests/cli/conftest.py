"""An in-process hub for the CLI's integration tests, and a way to run `cnet` beside it as admin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from clusternet_nats.cli.main import app
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer
from typer.testing import CliRunner, Result

Cnet = Callable[..., Awaitable[Result]]
VIEWER = "vic-viewer"


@pytest.fixture(scope="module")
async def served_hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    policy = {"bindings": [{"role": "view", "users": [VIEWER]}]}
    async with running_hub(nats_server.url, users={VIEWER: []}, policy=policy) as hub:
        yield hub


@pytest.fixture(scope="module")
def hub_url(served_hub: ServedHub) -> str:
    return served_hub.url


async def run_cnet(*args: str, input: str | None = None) -> Result:
    """`cnet ARGS...` (with `input` on stdin) in a thread: its asyncio.run must not block the hub's loop."""
    return await asyncio.to_thread(lambda: CliRunner().invoke(app, list(args), input=input))


@pytest.fixture
def cnet(served_hub: ServedHub) -> Cnet:
    """Runs `cnet --config <admin context of the hub> ARGS...`."""

    async def run(*args: str, input: str | None = None) -> Result:
        return await run_cnet(*served_hub.cnet_args(), *args, input=input)

    return run


@pytest.fixture(autouse=True)
def no_home_config(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """cnet never reads the developer's ~/.cnet/config in tests: CNET_CONFIG names an empty place."""
    monkeypatch.setenv("CNET_CONFIG", str(tmp_path_factory.mktemp("home") / "cnet-config"))

"""One system for the lifecycle tests: hub, scheduler, deployer and predictor as processes, two
simulated clusters in one agent process and a third ("far") in another, so that one child can be
cut off (its agent stopped) while the others go on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from clusternet_nats.testing.system import System

from ..bridge.conftest import parent  # noqa: F401 - the session's parent apiserver, for the bridge tests
from ..e2e.conftest import HubClient
from ..hub.conftest import http, served_hub  # noqa: F401 - an in-process hub and an admin session to it


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("lifecycle"), sim_clusters=2, labels_cycle="env=prod")
    sut.add_agent("far", "far", 1, "env=prod")
    sut.start(timeout=90)
    yield sut
    codes = sut.stop()
    assert all(code in (0, None) for code in codes.values()), f"services must exit 0 on SIGTERM: {codes}"


@pytest.fixture
async def hub(system: System) -> AsyncIterator[HubClient]:
    connector = aiohttp.TCPConnector(ssl=system.hub_ssl_context())
    async with aiohttp.ClientSession(headers=system.hub_headers(), connector=connector) as session:
        yield HubClient(session, system.hub_url)

"""One in-process hub for the module's tests; tests keep apart by namespace (`unique_ns`).

`http` is an admin session (system:masters) over HTTPS with the hub's generated CA; the auth
tests ask `served_hub` for sessions of other users.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer

VIEWER, EDITOR, OUTSIDER, AUDITOR = "vera-viewer", "ed-editor", "otto-outsider", "aude-auditor"
TEAM_A, TEAM_B = "team-a", "team-b"
USERS = {VIEWER: ["viewers"], EDITOR: [], OUTSIDER: [], AUDITOR: []}
POLICY = {
    "bindings": [
        {"role": "view", "groups": ["viewers"]},
        {"role": "edit", "users": [EDITOR], "namespaces": [TEAM_A]},
        {"role": "view", "users": [AUDITOR], "namespaces": [TEAM_A, TEAM_B]},
    ]
}


@pytest.fixture(scope="module")
async def served_hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url, users=USERS, policy=POLICY) as hub:
        yield hub


@pytest.fixture(scope="module")
def hub_url(served_hub: ServedHub) -> str:
    return served_hub.url


@pytest.fixture
async def http(served_hub: ServedHub) -> AsyncIterator[aiohttp.ClientSession]:
    async with served_hub.session() as session:
        yield session

"""`cnet token create|list|revoke` against an in-process hub and a real nats-server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from clusternet_nats.api.meta import utcnow
from clusternet_nats.cli.main import app
from clusternet_nats.hub.registration.records import TOKEN_PATTERN, token_store
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.testing.natsserver import NatsServer
from nats.js import JetStreamContext
from typer.testing import CliRunner, Result


@pytest.fixture
async def hub_url(nats_server: NatsServer) -> AsyncIterator[str]:
    async with running_hub(nats_server.url) as url:
        yield url


async def cnet(hub_url: str, *args: str) -> Result:
    result = await asyncio.to_thread(lambda: CliRunner().invoke(app, ["--server", hub_url, *args]))
    return result


async def test_create_list_revoke(hub_url: str, js: JetStreamContext) -> None:
    created = await cnet(hub_url, "token", "create", "--ttl", "3600", "--description", "edge sites")
    assert created.exit_code == 0, created.output
    token = created.output.strip()
    match = TOKEN_PATTERN.match(token)
    assert match, token
    token_id = match.group(1)
    stored = await token_store(js).get(token_id)
    assert stored is not None and stored.value.expires is not None
    assert stored.value.refusal(token, utcnow()) is None

    listed = await cnet(hub_url, "token", "list")
    assert listed.exit_code == 0 and token_id in listed.output and "edge sites" in listed.output
    assert token.split(".")[1] not in listed.output

    revoked = await cnet(hub_url, "token", "revoke", token_id)
    assert revoked.exit_code == 0, revoked.output
    assert await token_store(js).get(token_id) is None
    again = await cnet(hub_url, "token", "revoke", token_id)
    assert again.exit_code == 1 and "not found" in again.output


async def test_invalid_ttl_names_the_flag(hub_url: str) -> None:
    result = await cnet(hub_url, "token", "create", "--ttl", "-5")
    assert result.exit_code == 2 and "--ttl" in result.output

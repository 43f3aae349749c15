"""`cnet token create|list|revoke` against an in-process hub and a real nats-server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from clusternet_nats.api.meta import utcnow
from clusternet_nats.api.registration import BOOTSTRAP_TOKEN_PATTERN
from clusternet_nats.cli.main import app
from clusternet_nats.hub.registration.records import ensure_registration_buckets, token_store
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer
from nats.js import JetStreamContext
from typer.testing import CliRunner, Result


@pytest.fixture
async def hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url, users={"vic": ["viewers"]}, policy=VIEWERS) as served:
        yield served


VIEWERS = {"bindings": [{"role": "view", "groups": ["viewers"]}]}


async def cnet(hub: ServedHub, *args: str, user: str = "admin") -> Result:
    result = await asyncio.to_thread(lambda: CliRunner().invoke(app, [*hub.cnet_args(user), *args]))
    return result


async def test_create_list_revoke(hub: ServedHub, js: JetStreamContext) -> None:
    created = await cnet(hub, "token", "create", "--ttl", "3600", "--description", "edge sites")
    assert created.exit_code == 0, created.output
    token = created.output.strip()
    match = BOOTSTRAP_TOKEN_PATTERN.match(token)
    assert match, token
    token_id = match.group(1)
    stored = await token_store(js).get(token_id)
    assert stored is not None and stored.value.expires is not None
    assert stored.value.refusal(token, utcnow()) is None

    listed = await cnet(hub, "token", "list")
    assert listed.exit_code == 0 and token_id in listed.output and "edge sites" in listed.output
    assert token.split(".")[1] not in listed.output

    revoked = await cnet(hub, "token", "revoke", token_id)
    assert revoked.exit_code == 0, revoked.output
    assert await token_store(js).get(token_id) is None
    again = await cnet(hub, "token", "revoke", token_id)
    assert again.exit_code == 1 and "not found" in again.output


async def test_invalid_ttl_names_the_flag(hub: ServedHub) -> None:
    result = await cnet(hub, "token", "create", "--ttl", "-5")
    assert result.exit_code == 2 and "--ttl" in result.output


async def test_tokens_are_for_admins_only(hub: ServedHub, js: JetStreamContext) -> None:
    """A viewer of every namespace can neither mint, list nor revoke bootstrap tokens."""
    await ensure_registration_buckets(js)
    before = {key for key, _data, _rev in await token_store(js).bucket.entries()}
    for args in (("token", "create"), ("token", "list"), ("token", "revoke", "abcdef")):
        result = await cnet(hub, *args, user="vic")
        assert result.exit_code == 1, (args, result.output)
        assert "Error from server (Forbidden): bootstraptokens.registration" in result.output, result.output
        assert 'User "vic" cannot' in result.output and "Traceback" not in result.output
    assert {key for key, _data, _rev in await token_store(js).bucket.entries()} == before

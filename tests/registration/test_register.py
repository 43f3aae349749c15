"""Registration with a bootstrap token, against a real nats-server deciding through our callout."""

from __future__ import annotations

from clusternet_nats.api.registration import APPROVED

from tests.registration.harness import Client, RegistrationHub, new_cluster_id, register


async def test_token_registers_and_credentials_connect(hub: RegistrationHub) -> None:
    cluster_id = new_cluster_id()
    reply, secret = await register(hub.secure.server.url, cluster_id, await hub.token())
    assert reply.result == APPROVED, reply
    assert reply.dedicated_namespace and reply.dedicated_namespace.startswith("clusternet-")
    nc = await Client().connect(hub.secure.server.url, cluster_id, secret)
    assert nc.is_connected
    await nc.close()

"""Hub replicas share the auth callout: each connection is decided once, by one of them."""

from __future__ import annotations

import asyncio
import uuid

import nats
from clusternet_nats.hub.registration.callout import AuthCallout
from clusternet_nats.hub.registration.testing import RegistrationHub
from clusternet_nats.runtime.connection import barrier

from tests.registration.harness import Client


async def test_a_second_replica_answers_part_of_a_storm(hub: RegistrationHub) -> None:
    second_conn = await nats.connect(hub.secure.url("callout"))
    try:
        second = AuthCallout(second_conn, hub.nc.jetstream(), hub.callout.issuer_seed, domain="hub")
        await second.start()
        await barrier(second_conn)
        first_before = hub.callout.stats.granted
        token = await hub.token()
        clients = [Client() for _ in range(40)]
        url = hub.secure.server.url
        await asyncio.gather(*(c.connect(url, str(uuid.uuid4()), token) for c in clients))
        for client in clients:
            assert client.nc is not None
            await client.nc.close()
        first = hub.callout.stats.granted - first_before
        # Each connect returned once its grant was sent: every one granted exactly once, and both
        # replicas took a share (a queue group picks at random: one taking all 40 has odds 2**-39).
        assert first + second.stats.granted == 40
        assert first > 0 and second.stats.granted > 0, (first, second.stats.granted)
        assert hub.callout.stats.refused == second.stats.refused == 0
    finally:
        await second_conn.close()

"""pytest fixtures: a real nats-server per test session, a connection per test.

Tests share one server and stay apart by using their own namespaces (`unique_ns`); a test
that restarts NATS asks for `private_nats` instead.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from clusternet_nats.testing.natsserver import NatsServer
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext


@pytest.fixture(scope="session")
def nats_server() -> Iterator[NatsServer]:
    server = NatsServer().start()
    yield server
    server.cleanup()


@pytest.fixture
def private_nats() -> Iterator[NatsServer]:
    server = NatsServer().start()
    yield server
    server.cleanup()


@pytest.fixture
async def nc(nats_server: NatsServer) -> AsyncIterator[NATS]:
    from clusternet_nats.runtime.connection import Connection

    conn = Connection(nats_server.url, "pytest")
    client = await conn.connect(timeout=10)
    yield client
    await conn.close()


@pytest.fixture
async def js(nc: NATS) -> JetStreamContext:
    from clusternet_nats.store import ensure_buckets

    context = nc.jetstream()
    await ensure_buckets(context)
    return context


@pytest.fixture
def unique_ns() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"

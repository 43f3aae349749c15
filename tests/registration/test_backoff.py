"""Clients refused by the hub come back spread out and ever less often, never at a fixed pace."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import defaultdict

import nats
import pytest
from clusternet_nats.api.subjects import AUTH_REQUEST
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.testing import RegistrationHub
from clusternet_nats.runtime.connection import Connection, barrier
from clusternet_nats.store.backoff import Backoff
from nats.aio.msg import Msg


def test_windows_double_up_to_the_cap_and_delays_fall_inside_them() -> None:
    backoff = Backoff(0.1, 1.0)
    windows = []
    for _ in range(8):
        windows.append(backoff.window)
        assert 0 <= backoff.next_delay() <= windows[-1]
    assert windows == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]
    backoff.reset()
    assert backoff.window == 0.1
    long_failing = Backoff(0.1, 30.0, attempt=10_000)
    assert long_failing.window == 30.0


def test_two_clients_draw_different_delays() -> None:
    first, second = Backoff(1.0, 1.0), Backoff(1.0, 1.0)
    assert [first.next_delay() for _ in range(5)] != [second.next_delay() for _ in range(5)]


def test_a_base_above_the_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="base 5 must be positive and at most cap 1"):
        Backoff(5, 1)


async def test_refused_agents_retry_spread_out_and_bounded(hub: RegistrationHub) -> None:
    """Twelve would-be clusters with a token the hub does not know connect at the same moment for
    three seconds: each tries again (the callout sees several attempts from each), but no more than
    a backoff allows, and their later attempts do not land together as fixed waits would."""
    attempts: dict[str, list[float]] = defaultdict(list)
    loop = asyncio.get_running_loop()

    async def seen(msg: Msg) -> None:
        claims = jwt.decode(msg.data.decode())
        attempts[claims["nats"]["connect_opts"]["user"]].append(loop.time())

    # A plain subscriber beside the callout's queue group sees every auth request the server sends.
    watcher = await nats.connect(hub.secure.url("callout"))
    try:
        await watcher.subscribe(AUTH_REQUEST.format(), cb=seen)
        await barrier(watcher)
        clients = [str(uuid.uuid4()) for _ in range(12)]
        server = hub.secure.server.url.removeprefix("nats://")
        connections = [Connection(f"nats://{c}:abcdef.0123456789abcdef@{server}", c, retry_cap=0.8) for c in clients]
        results = await asyncio.gather(*(conn.connect(timeout=3) for conn in connections), return_exceptions=True)
        assert all(isinstance(r, Exception) for r in results), results
        await barrier(watcher)
    finally:
        with contextlib.suppress(Exception):
            await watcher.close()
    counts = {c: len(attempts[c]) for c in clients}
    # Windows of 0.1, 0.2, 0.4 then 0.8 s: about eight attempts in 3 s; a fixed 0.1 s would be ~30.
    assert all(3 <= n <= 20 for n in counts.values()), counts
    third = sorted(attempts[c][2] for c in clients)
    assert third[-1] - third[0] > 0.05, f"third attempts all within {third[-1] - third[0]:.3f} s"
    later = {round(t, 1) for c in clients for t in attempts[c][1:]}
    assert len(later) >= 6, f"retries fell into only {len(later)} tenths of a second"

"""What a connection keeps of the errors nats-py reports to it, and what its close leaves."""

import asyncio
from pathlib import Path

import nats.errors
import pytest
from clusternet_nats.runtime.connection import ERRORS_KEPT, Connection, CredentialsRefused, barrier
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg


async def test_only_the_latest_errors_are_kept() -> None:
    """A link that stays down reports an error per reconnect attempt for as long as it is down: a
    service's memory must not grow with that."""
    conn = Connection("nats://127.0.0.1:4222", "test")
    for attempt in range(3 * ERRORS_KEPT):
        await conn._error(ConnectionRefusedError(attempt))
    assert len(conn.errors) == ERRORS_KEPT
    assert [e.args[0] for e in conn.errors] == list(range(2 * ERRORS_KEPT, 3 * ERRORS_KEPT))


async def test_a_close_while_the_link_is_cut_leaves_nothing_running(nats_server: NatsServer) -> None:
    """Closed while reconnecting over a cut link, with a subscription and a publish buffered: the
    close returns, and no task of the client goes on (no reconnect loop dialling for good)."""
    before = asyncio.all_tasks()
    async with TcpLink("127.0.0.1", nats_server.port) as link:
        conn = Connection(link.url, "test")
        nc = await conn.connect()

        async def handle(_msg: Msg) -> None:
            pass

        await nc.subscribe("cut.test", cb=handle)
        await link.cut()
        await eventually(lambda: nc.is_reconnecting, 10, what="the client reconnecting")
        await nc.publish("cut.test", b"buffered while reconnecting")
        await conn.close()
    assert nc.is_closed

    def leftovers() -> list[str]:
        return [repr(t.get_coro()) for t in asyncio.all_tasks() - before if not t.done()]

    await eventually(lambda: not leftovers(), 5, what=f"the client's tasks ended: {leftovers()}")


async def test_a_subscription_behind_a_barrier_is_there_for_another_clients_request(
    nats_server: NatsServer, nc: NATS, unique_ns: str
) -> None:
    """nats-py's `flush()` alone let about one request in a hundred find no responder here (its
    PING overtakes the SUB still in the client's buffer); the barrier must let none."""
    conn = Connection(nats_server.url, "responder")
    responder = await conn.connect()

    async def answer(msg: Msg) -> None:
        await msg.respond(b"here")

    missed = 0
    try:
        for i in range(1000):
            sub = await responder.subscribe(f"{unique_ns}.svc.{i}", cb=answer)
            await barrier(responder)
            try:
                await nc.request(f"{unique_ns}.svc.{i}", b"", timeout=5)
            except nats.errors.NoRespondersError:
                missed += 1
            await sub.unsubscribe()
    finally:
        await conn.close()
    assert missed == 0, f"{missed} of 1000 requests found no responder"


async def test_refused_credentials_end_a_connect_that_asks_so_at_the_first_refusal(tmp_path: Path) -> None:
    """Every refusal counts against its source at the hub's callout: a caller holding other
    credentials asks for the first refusal to end the attempt. Refused there is a different answer
    from unreachable, which is still retried; and the connection it makes still reconnects."""
    server = NatsServer(tmp_path / "nats", extra_config='authorization { user: agent, password: "right" }')
    server.start()
    try:
        wrong = Connection(f"nats://agent:wrong@127.0.0.1:{server.port}", "test")
        with pytest.raises(CredentialsRefused):
            await wrong.connect(30, retry_refused=False)
        assert sum("authorization violation" in str(e).lower() for e in wrong.errors) == 1, list(wrong.errors)

        retried = Connection(f"nats://agent:wrong@127.0.0.1:{server.port}", "test")
        with pytest.raises(nats.errors.NoServersError):
            await retried.connect(1)
        assert sum("authorization violation" in str(e).lower() for e in retried.errors) > 1

        right = Connection(f"nats://agent:right@127.0.0.1:{server.port}", "test")
        nc = await right.connect(30, retry_refused=False)
        server.restart()
        await eventually(lambda: nc.is_connected and nc.stats["reconnects"] > 0, 20, what="reconnected")
        await right.close()
    finally:
        server.cleanup()

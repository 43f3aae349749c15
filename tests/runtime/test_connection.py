"""What a connection keeps of the errors nats-py reports to it, and what its close leaves."""

import asyncio

from clusternet_nats.runtime.connection import ERRORS_KEPT, Connection
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.waiting import eventually
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

"""What a connection keeps of the errors nats-py reports to it."""

from clusternet_nats.runtime.connection import ERRORS_KEPT, Connection


async def test_only_the_latest_errors_are_kept() -> None:
    """A link that stays down reports an error per reconnect attempt for as long as it is down: a
    service's memory must not grow with that."""
    conn = Connection("nats://127.0.0.1:4222", "test")
    for attempt in range(3 * ERRORS_KEPT):
        await conn._error(ConnectionRefusedError(attempt))
    assert len(conn.errors) == ERRORS_KEPT
    assert [e.args[0] for e in conn.errors] == list(range(2 * ERRORS_KEPT, 3 * ERRORS_KEPT))

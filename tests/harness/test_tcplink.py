"""TcpLink, the cut a partition test relies on: once cut, nothing crosses it, not even a
connection accepted just before the cut whose far side was still being dialled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from clusternet_nats.testing import tcplink
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tcplink import TcpLink


async def _first_bytes(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        return await asyncio.wait_for(reader.read(64), 10)
    except ConnectionResetError:
        return b""
    finally:
        writer.transport.abort()


async def test_relays_until_cut(nats_server: NatsServer) -> None:
    async with TcpLink("127.0.0.1", nats_server.port) as link:
        assert (await _first_bytes(link.port)).startswith(b"INFO")  # the positive control
        await link.cut()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", link.port)


async def test_a_connection_still_dialling_its_far_side_when_cut_is_reset(
    nats_server: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = TcpLink("127.0.0.1", nats_server.port)
    dialling, go_on = asyncio.Event(), asyncio.Event()
    dial = asyncio.open_connection

    async def dial_slowly(host: str, port: int, **kwargs: Any) -> Any:
        if (host, port) == link.target:
            dialling.set()
            await go_on.wait()
        return await dial(host, port, **kwargs)

    monkeypatch.setattr(tcplink.asyncio, "open_connection", dial_slowly)
    async with link:
        reading = asyncio.create_task(_first_bytes(link.port))
        await asyncio.wait_for(dialling.wait(), 10)
        await link.cut()
        go_on.set()
        assert await reading == b"", "a connection accepted before the cut must not cross it"

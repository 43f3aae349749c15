"""A TCP link that a test can cut and restore: a child's network path to the hub, partitioned.

Everything on either side is real (nats-server, the agent's client); only the wire between them
goes through this relay, so "the link is down" is what it would be on a real network: open
connections are reset and new ones refused until `restore()`, after which clients reconnect on
their own. It listens on a fixed port across cuts, as a NAT gateway's address stays the same.
"""

from __future__ import annotations

import asyncio

from clusternet_nats.testing.natsserver import free_port


class TcpLink:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    async def restore(self) -> None:
        """Starts relaying (again)."""
        if self._server is None:
            self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Resets every open connection and refuses new ones."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        # Known from its accept on, so a cut while its far side is still being dialled resets it
        # too (it outlived the cut otherwise: a child's leaf, reconnecting then, stayed linked).
        self._writers.add(client_writer)
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            self._writers.discard(client_writer)
            client_writer.transport.abort()
            return
        if client_writer not in self._writers:  # cut meanwhile
            server_writer.transport.abort()
            return
        self._writers.add(server_writer)
        await asyncio.gather(self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            writer.transport.abort()

    async def __aenter__(self) -> TcpLink:
        await self.restore()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.cut()

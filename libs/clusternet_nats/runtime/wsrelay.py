"""An upgraded (WebSocket) connection carried over a proxy stream's frames, the same on both ends.

kubectl 1.30+ speaks WebSocket for exec, attach and cp (`v5.channel.k8s.io`, ...) and, since 1.31,
for port-forward (`SPDY/3.1+portforward.k8s.io` inside WebSocket). The hub terminates the client's
WebSocket, the agent opens its own to the child's API server, and each relays the messages of its
socket to the other as `data` frames within the stream's credit window (runtime/frames.py), so a
slow reader on either side holds the sender on the other. A message keeps its boundary and type:
each data frame starts with one byte of flags (`TEXT`, `FINAL`: the message's last piece), then up
to `CHUNK - 1` bytes of it; a message of several MiB is many frames. A socket's close travels as the
direction's `end` with the close code and reason (`ProxyEnd`), and the other side closes its socket
with them.
"""

from __future__ import annotations

from typing import Protocol

import aiohttp
from clusternet_nats.api.proxy import CHUNK, MAX_MESSAGE, FrameKind, ProxyEnd
from clusternet_nats.runtime.frames import FrameReader, FrameSender, StreamBroken

TEXT = 0x01
FINAL = 0x02
_GONE = frozenset({1004, 1006, 1015})
"""Close codes that report a dropped connection and may not be sent (RFC 6455 7.4.1): the other
side hears 1001 (going away) instead."""
_NO_STATUS = 1005


class Socket(Protocol):
    """What the relay needs of a WebSocket: aiohttp's server and client sockets both fit."""

    @property
    def close_code(self) -> int | None: ...

    def exception(self) -> BaseException | None: ...

    async def receive(self, timeout: float | None = None) -> aiohttp.WSMessage: ...

    async def send_bytes(self, data: bytes, compress: int | None = None) -> None: ...

    async def send_str(self, data: str, compress: int | None = None) -> None: ...

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool: ...


async def socket_to_frames(socket: Socket, sender: FrameSender) -> ProxyEnd:
    """Sends the socket's messages until it closes, then the `end` with its close code; returns that end."""
    end = ProxyEnd()
    while True:
        message = await socket.receive()
        if message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT):
            text = message.type is aiohttp.WSMsgType.TEXT
            await _send_message(sender, message.data.encode() if text else message.data, TEXT if text else 0)
            continue
        if message.type is aiohttp.WSMsgType.CLOSE:
            end = ProxyEnd(close_code=message.data, close_reason=message.extra or None)
        elif message.type is aiohttp.WSMsgType.ERROR:
            end = ProxyEnd(error=f"the WebSocket failed: {socket.exception()!r}", close_code=1011)
        else:  # CLOSING / CLOSED: closed from this side, or the connection dropped
            end = ProxyEnd(close_code=socket.close_code)
        break
    await sender.control(FrameKind.END, end)
    return end


async def _send_message(sender: FrameSender, data: bytes, flags: int) -> None:
    step = CHUNK - 1
    for start in range(0, max(len(data), 1), step):
        last = start + step >= len(data)
        await sender.data(bytes([flags | (FINAL if last else 0)]) + data[start : start + step])


async def frames_to_socket(reader: FrameReader, socket: Socket) -> ProxyEnd:
    """Writes the other side's messages to the socket, giving credit back as each piece is written
    (aiohttp waits for the socket to drain), until the other side's `end`; returns that end."""
    pieces: list[bytes] = []
    size = 0
    while (frame := await reader.next()).kind is FrameKind.DATA:
        if not frame.data:
            raise StreamBroken("an empty data frame on an upgraded stream")
        flags, piece = frame.data[0], frame.data[1:]
        pieces.append(piece)
        size += len(piece)
        if size > MAX_MESSAGE:
            raise StreamBroken(f"a WebSocket message over {MAX_MESSAGE} bytes")
        if flags & FINAL:
            data, pieces, size = b"".join(pieces), [], 0
            if flags & TEXT:
                await socket.send_str(data.decode(errors="replace"))
            else:
                await socket.send_bytes(data)
        await reader.consumed()
    try:
        return ProxyEnd.model_validate_json(frame.data) if frame.data else ProxyEnd()
    except ValueError:
        return ProxyEnd(error=f"malformed end frame {frame.data[:200]!r}", close_code=1011)


async def close_like(socket: Socket, end: ProxyEnd) -> None:
    """Closes the socket as the other side's closed (its code when one may be sent)."""
    code = end.close_code
    if end.error and (code is None or code in _GONE):
        code = 1011
    elif code in _GONE:
        code = 1001
    elif code is None or code == _NO_STATUS or not 1000 <= code < 5000:
        code = 1000
    await socket.close(code=code, message=(end.close_reason or "").encode()[:123])

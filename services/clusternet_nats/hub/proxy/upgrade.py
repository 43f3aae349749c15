"""The hub's side of an upgraded proxy request: kubectl exec, attach, cp and port-forward.

A request asking for a WebSocket (`Upgrade: websocket`) goes to the agent like any other, after the
same authentication and `sockets/proxy` authorization, with the subprotocols the client offers;
the agent opens its own WebSocket to the child's API server as the user. When the child accepts
(a 101 head naming the subprotocol it chose) the hub completes the client's handshake with that
subprotocol and relays messages both ways (runtime/wsrelay.py) until either side closes; the other
then closes with the same code. A refusal (pod not found, forbidden, no upgrade possible) comes
back as an ordinary answer and reaches the client unchanged. SPDY upgrades (kubectl with its
WebSocket transport turned off) are not relayed: the child's refusal passes through.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from aiohttp import web
from clusternet_nats.api.proxy import MAX_MESSAGE, ProxyEnd, ProxyHead, WebSocketUpgrade
from clusternet_nats.hub.proxy.stream import HubStream
from clusternet_nats.runtime.frames import StreamBroken
from clusternet_nats.runtime.wsrelay import close_like, frames_to_socket, socket_to_frames

log = structlog.get_logger(__name__)
SWITCHING = 101
_PROTOCOL = "Sec-WebSocket-Protocol"


def websocket_upgrade(request: web.Request) -> WebSocketUpgrade | None:
    """The upgrade the client asks for, with the subprotocols it offers; None for any other request."""
    if request.method != "GET" or request.headers.get("Upgrade", "").lower() != "websocket":
        return None
    offered = ",".join(request.headers.getall(_PROTOCOL, []))
    return WebSocketUpgrade(protocols=[p.strip() for p in offered.split(",") if p.strip()])


async def relay(request: web.Request, stream: HubStream, head: ProxyHead) -> web.WebSocketResponse:
    """Completes the client's handshake with the child's subprotocol and relays until either closes."""
    chosen = [value for key, value in head.headers if key.lower() == _PROTOCOL.lower()]
    socket = web.WebSocketResponse(protocols=chosen[:1], max_msg_size=MAX_MESSAGE, autoping=True)
    await socket.prepare(request)
    bound = log.bind(stream=stream.id, path=request.path, protocol=socket.ws_protocol)
    bound.info("proxy.upgraded")
    outgoing = asyncio.create_task(socket_to_frames(socket, stream.sender))
    incoming = asyncio.create_task(frames_to_socket(stream.reader, socket))
    try:
        done, _ = await asyncio.wait({outgoing, incoming}, return_when=asyncio.FIRST_COMPLETED)
        if incoming in done:  # the child's socket closed (or the stream broke): close the client's alike
            end = incoming.result()
            stream.finished = True
            await close_like(socket, end)
        else:  # the client closed: its end (with the code) is on its way to the agent
            stream.finished = True
            end = outgoing.result()
        bound.info("proxy.upgrade_closed", code=end.close_code, error=end.error)
    except (StreamBroken, ConnectionError) as err:
        bound.info("proxy.upgrade_broken", error=repr(err))
        await close_like(socket, _broken(str(err)))
    finally:
        for task in (outgoing, incoming):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return socket


def _broken(why: str) -> ProxyEnd:
    return ProxyEnd(error=why, close_code=1011, close_reason="proxy stream broke")

"""The agent's side of an upgraded proxy request (kubectl exec, attach, cp, port-forward).

The hub asked for a WebSocket (`ProxyOpen.upgrade`); the agent opens one to its API server as the
user (identity.py: impersonation or the passed credential), offering the client's subprotocols.
The child's refusal is answered like any answer, unchanged; its acceptance is a 101 head naming the
subprotocol it chose, then messages both ways (runtime/wsrelay.py) until either side closes, the
other closing with the same code.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import structlog
from clusternet_nats.agent.backends.apiserver import ApiServer, UpstreamResponse, UpstreamSocket, WebSocketApiServer
from clusternet_nats.agent.proxy.identity import upstream_request
from clusternet_nats.api.proxy import FrameKind, ProxyEnd, ProxyHead, ProxyOpen, failure_status
from clusternet_nats.runtime.frames import FrameReader, FrameSender
from clusternet_nats.runtime.wsrelay import close_like, frames_to_socket, socket_to_frames
from clusternet_nats.store.cancelling import cancel_and_wait

SWITCHING = 101
PROTOCOL = "Sec-WebSocket-Protocol"


async def open_socket(apiserver: ApiServer, request: ProxyOpen) -> UpstreamSocket | UpstreamResponse:
    """The child's WebSocket for the request, or its refusal."""
    if not isinstance(apiserver, WebSocketApiServer):
        message = f"this cluster's API server takes no upgrades ({request.path})"
        body = _once(failure_status(400, "BadRequest", message))
        return UpstreamResponse(400, [("Content-Type", "application/json")], body)
    protocols = request.upgrade.protocols if request.upgrade is not None else []
    return await apiserver.open_websocket(upstream_request(request, b""), protocols)


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def relay(
    upstream: UpstreamSocket, sender: FrameSender, reader: FrameReader, log: structlog.BoundLogger
) -> None:
    """Announces the upgrade to the hub and relays until either side closes; raises StreamBroken
    when the stream breaks (the caller ends it with the error, the hub closes its client with 1011)."""
    headers = [(PROTOCOL, upstream.protocol)] if upstream.protocol else []
    await sender.control(FrameKind.HEAD, ProxyHead(status=SWITCHING, headers=headers))
    outgoing = asyncio.create_task(socket_to_frames(upstream.socket, sender))
    incoming = asyncio.create_task(frames_to_socket(reader, upstream.socket))
    end = ProxyEnd(error="the relay stopped", close_code=1011)
    try:
        done, _ = await asyncio.wait({outgoing, incoming}, return_when=asyncio.FIRST_COMPLETED)
        end = incoming.result() if incoming in done else outgoing.result()
        log.info("proxy.upgrade_closed", code=end.close_code, by="hub" if incoming in done else "cluster")
    finally:
        await cancel_and_wait((outgoing, incoming))
        with contextlib.suppress(Exception):
            await close_like(upstream.socket, end)
        await upstream.close()

"""Serves this cluster's proxied requests: one subscription, one task per stream.

Every frame must come from the hub: its reply is this stream's subject under the cluster's own
reply prefix (runtime/tunnel.py `from_hub`), which only hub-side identities may name and which NATS
permissions let only this cluster answer on; anything else is dropped. A stream performs its request
against the backend's `ApiServer` and sends the answer back within the hub's credit, so a slow
client stops the agent reading its API server. The stream ends when the answer does, on the hub's
`cancel`, at its timeout, or when the hub has been silent past `IDLE_LIMIT` (it went away).

The watchdog that finds silent streams wakes every `KEEPALIVE` only while a stream is open: a
process of 10,000 simulated clusters, nearly none of them proxied at any moment, otherwise woke
2,000 times a second to look at empty tables.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from clusternet_nats.agent.backends.apiserver import ApiServer, UpstreamResponse, UpstreamSocket
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.proxy.identity import upstream_request
from clusternet_nats.agent.proxy.upgrade import open_socket, relay
from clusternet_nats.api.proxy import (
    CHUNK,
    IDLE_LIMIT,
    KEEPALIVE,
    FrameKind,
    ProxyEnd,
    ProxyHead,
    ProxyOpen,
    failure_status,
    stream_reply,
)
from clusternet_nats.api.subjects import SOCKETS
from clusternet_nats.runtime.frames import Frame, FrameReader, FrameSender, StreamBroken, decode_frame, end_error
from clusternet_nats.runtime.tunnel import from_hub
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from pydantic import ValidationError

log = structlog.get_logger(__name__)
_STATUS_HEADERS = [("Content-Type", "application/json")]


class ProxyServer:
    def __init__(self, nc: NATS, identity: ClusterIdentity, apiserver: ApiServer) -> None:
        self.nc, self.namespace, self.apiserver = nc, identity.namespace, apiserver
        self.streams: dict[str, AgentStream] = {}
        self.streams_open = asyncio.Event()
        """Set while `streams` holds any: the watchdog waits for it."""
        self._log = log.bind(cluster=identity.name)

    async def serve(self) -> None:
        sub = await self.nc.subscribe(SOCKETS.filter(namespace=self.namespace), cb=self._on_message)
        try:
            while True:  # the watchdog: streams whose hub went silent are abandoned
                await self.streams_open.wait()
                await asyncio.sleep(KEEPALIVE)
                now = asyncio.get_running_loop().time()
                for stream in list(self.streams.values()):
                    if now - stream.heard > IDLE_LIMIT:
                        stream.abandon("the hub has been silent for too long")
        finally:
            for stream in list(self.streams.values()):
                stream.abandon("the agent is stopping")
            await asyncio.gather(*(s.task for s in self.streams.values() if s.task), return_exceptions=True)
            if not self.nc.is_closed:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

    async def _on_message(self, msg: Msg) -> None:
        stream_id = msg.subject.rsplit(".", 1)[-1]
        if not from_hub(msg, self.namespace) or msg.reply != stream_reply(self.namespace, stream_id):
            self._log.warning("proxy.dropped", subject=msg.subject, reply=msg.reply, reason="not the hub's")
            return
        try:
            frame = decode_frame(msg)
        except StreamBroken as err:
            self._log.warning("proxy.dropped", subject=msg.subject, reason=str(err))
            return
        stream = self.streams.get(stream_id)
        if stream is not None:
            stream.accept(frame)
        elif frame.kind is FrameKind.OPEN and frame.seq == 0:
            try:
                request = ProxyOpen.model_validate_json(frame.data)
            except ValidationError as err:
                self._log.warning("proxy.bad_open", stream=stream_id, error=str(err))
                await FrameSender(self.nc, msg.reply).control(FrameKind.END, ProxyEnd(error=f"invalid open: {err}"))
                return
            self._open(stream_id, msg.reply, request)
        elif frame.kind not in (FrameKind.CANCEL, FrameKind.END):  # a stream this agent does not know
            sender = FrameSender(self.nc, msg.reply)
            await sender.control(FrameKind.END, ProxyEnd(error="no such stream at the agent (it restarted?)"))

    def _open(self, stream_id: str, reply: str, request: ProxyOpen) -> None:
        stream = AgentStream(self.nc, reply, request, self.apiserver, self._log.bind(stream=stream_id))
        self.streams[stream_id] = stream
        self.streams_open.set()
        stream.task = asyncio.create_task(stream.run(), name=f"proxy-{stream_id}")
        stream.task.add_done_callback(lambda _t: self._closed(stream_id))

    def _closed(self, stream_id: str) -> None:
        self.streams.pop(stream_id, None)
        if not self.streams:
            self.streams_open.clear()


class AgentStream:
    """One exchange: read the request body, call the API server, stream the answer back."""

    def __init__(
        self, nc: NATS, reply: str, request: ProxyOpen, apiserver: ApiServer, logger: structlog.BoundLogger
    ) -> None:
        self.request, self.apiserver, self._log = request, apiserver, logger
        self.sender = FrameSender(nc, reply)
        self.reader = FrameReader(self.sender, seq=1)
        self.heard = asyncio.get_running_loop().time()
        self.task: asyncio.Task[None] | None = None
        self._head_sent = False

    def accept(self, frame: Frame) -> None:
        self.heard = asyncio.get_running_loop().time()
        other = self.reader.accept(frame)
        if other is not None and other.kind is FrameKind.CANCEL:
            self.abandon("cancelled by the hub (the client went away)")

    def abandon(self, why: str) -> None:
        if self.task is not None and not self.task.done():
            self._log.info("proxy.abandoned", reason=why)
            self.task.cancel()

    async def run(self) -> None:
        request = self.request
        log = self._log.bind(method=request.method, path=request.path, user=request.user.name)
        try:
            async with asyncio.timeout(request.timeout):
                body = await self._body() if request.has_body else b""
                if request.upgrade is not None:
                    response = await open_socket(self.apiserver, request)
                    if isinstance(response, UpstreamSocket):
                        self._head_sent = True
                        await relay(response, self.sender, self.reader, log)
                        return
                else:
                    response = await self.apiserver.send(upstream_request(request, body))
                try:
                    await self._answer(response)
                finally:
                    await response.close()
            await self.sender.control(FrameKind.END, ProxyEnd())
            log.debug("proxy.done")
        except TimeoutError:
            await self._fail(504, "Timeout", f"the cluster's API server did not answer within {request.timeout}s")
        except StreamBroken as err:
            log.info("proxy.broken", error=str(err))
            await self._fail(502, "BadGateway", str(err))
        except Exception as err:
            log.exception("proxy.failed")
            await self._fail(502, "BadGateway", f"the agent could not proxy the request: {err!r}")

    async def _body(self) -> bytes:
        chunks: list[bytes] = []
        while (frame := await self.reader.next()).kind is FrameKind.DATA:
            chunks.append(frame.data)
            await self.reader.consumed()
        error = end_error(frame)
        if error:
            raise StreamBroken(f"the request body did not arrive whole: {error}")
        return b"".join(chunks)

    async def _answer(self, response: UpstreamResponse) -> None:
        await self.sender.control(FrameKind.HEAD, ProxyHead(status=response.status, headers=list(response.headers)))
        self._head_sent = True
        async for chunk in response.body:
            for start in range(0, len(chunk), CHUNK):
                await self.sender.data(chunk[start : start + CHUNK])

    async def _fail(self, code: int, reason: str, message: str) -> None:
        """A Status in the API server's stead before the head went out; the body's end with the
        error after (the hub closes the client's connection, as a broken upstream would)."""
        with contextlib.suppress(Exception):
            if not self._head_sent:
                await self.sender.control(FrameKind.HEAD, ProxyHead(status=code, headers=_STATUS_HEADERS))
                self._head_sent = True
                await self.sender.closing_data(failure_status(code, reason, message))
                await self.sender.control(FrameKind.END, ProxyEnd())
            else:
                await self.sender.control(FrameKind.END, ProxyEnd(error=message))

"""The hub's side of one proxied exchange (api/proxy.py): open, body out, head and body back.

Its frames to the agent carry this stream's reply subject, so the server answers any of them
with no-responders at once when the cluster's agent is not subscribed (its leaf link is down,
the agent is stopped): `AgentGone`, never a hang. Keepalives (zero credit) on an idle stream find
that out within `KEEPALIVE` seconds and tell the agent the hub is still there.
"""

from __future__ import annotations

import asyncio
import contextlib

from clusternet_nats.api.proxy import FrameKind, ProxyHead, ProxyOpen, socket_subject, stream_reply
from clusternet_nats.runtime.frames import Frame, FrameReader, FrameSender, StreamBroken, decode_frame
from clusternet_nats.runtime.tunnel import is_no_responders
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.nuid import NUID

_nuid = NUID()


class AgentGone(StreamBroken):
    """Nobody serves the cluster's proxy subjects: its agent is disconnected."""


class HubStream:
    def __init__(self, nc: NATS, namespace: str) -> None:
        self.nc = nc
        self.id = _nuid.next().decode()
        self.reply = stream_reply(namespace, self.id)
        self.sender = FrameSender(nc, socket_subject(namespace, self.id), reply=self.reply)
        self.reader = FrameReader(self.sender)
        self._head: asyncio.Future[ProxyHead] = asyncio.get_running_loop().create_future()
        self._sub: Subscription | None = None
        self.finished = False

    async def open(self, request: ProxyOpen) -> None:
        self._sub = await self.nc.subscribe(self.reply, cb=self._on_message)
        await self.sender.control(FrameKind.OPEN, request)

    async def head(self, timeout: float) -> ProxyHead:
        """The answer's status and headers; raises AgentGone, StreamBroken or TimeoutError."""
        async with asyncio.timeout(timeout):
            return await asyncio.shield(self._head)

    async def next(self) -> Frame:
        return await self.reader.next()

    async def close(self) -> None:
        """Unsubscribes; an exchange not finished is cancelled at the agent."""
        if not self.finished and not self.nc.is_closed:
            with contextlib.suppress(Exception):
                await self.sender.control(FrameKind.CANCEL)
        self.reader.fail(StreamBroken("the stream is closed"))
        if self._sub is not None and not self.nc.is_closed:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        if not self._head.done():
            self._head.cancel()

    async def _on_message(self, msg: Msg) -> None:
        if is_no_responders(msg):
            self._fail(AgentGone("nobody serves the cluster's proxy subjects"))
            return
        try:
            frame = decode_frame(msg)
        except StreamBroken as err:
            self._fail(err)
            return
        other = self.reader.accept(frame)
        if frame.kind is FrameKind.END and not self._head.done():
            self._head.set_exception(StreamBroken(f"the agent ended the stream before answering: {frame.data!r}"))
        if other is not None and other.kind is FrameKind.HEAD and not self._head.done():
            try:
                self._head.set_result(ProxyHead.model_validate_json(other.data))
            except ValueError as err:
                self._fail(StreamBroken(f"the agent's head is malformed: {err}"))

    def abort(self, error: StreamBroken) -> None:
        """Ends the wait for the head and for data (the client went away)."""
        self._fail(error)

    def _fail(self, error: StreamBroken) -> None:
        self.reader.fail(error)
        if not self._head.done():
            self._head.set_exception(error)

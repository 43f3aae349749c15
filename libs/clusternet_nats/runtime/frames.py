"""Both ends of a proxied exchange's frames (api/proxy.py): numbering, order, and the credit window.

The hub and the agent each send one direction with a `FrameSender` and read the other with a
`FrameReader`; the same code on both sides, so the window and the order check cannot disagree.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from clusternet_nats.api.meta import Model
from clusternet_nats.api.proxy import FRAME_HEADER, SEQ_HEADER, WINDOW, Credit, FrameKind, ProxyEnd
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg


class StreamBroken(Exception):
    """The stream cannot go on: a frame was lost or malformed, or the other side went away."""


@dataclass(frozen=True)
class Frame:
    kind: FrameKind
    seq: int
    data: bytes


def decode_frame(msg: Msg) -> Frame:
    """Raises StreamBroken for a message that is not a frame."""
    headers = msg.headers or {}
    try:
        return Frame(FrameKind(headers.get(FRAME_HEADER, "")), int(headers.get(SEQ_HEADER, "")), msg.data)
    except ValueError:
        raise StreamBroken(f"not a proxy frame (headers {headers!r})") from None


def end_error(frame: Frame) -> str | None:
    """The error an `end` frame reports; None when the body is whole."""
    if not frame.data:
        return None
    try:
        return ProxyEnd.model_validate_json(frame.data).error
    except ValueError:
        return f"malformed end frame {frame.data[:200]!r}"


class FrameSender:
    """One direction: numbered frames, data frames only while the receiver has given credit."""

    def __init__(self, nc: NATS, subject: str, reply: str = "", seq: int = 0) -> None:
        self.nc, self.subject, self.reply = nc, subject, reply
        self.seq = seq
        self._credit = WINDOW
        self._more = asyncio.Event()
        self._broken: str | None = None

    def grant(self, frames: int) -> None:
        self._credit += frames
        self._more.set()

    def break_off(self, reason: str) -> None:
        """Wakes a sender waiting for credit: the stream is over."""
        self._broken = reason
        self._more.set()

    async def control(self, kind: FrameKind, body: Model | None = None) -> None:
        await self._publish(kind, body.to_json() if body is not None else b"")

    async def data(self, chunk: bytes) -> None:
        """Waits for credit (the receiver is slow), then sends; raises StreamBroken once broken off."""
        while self._credit <= 0 and self._broken is None:
            self._more.clear()
            await self._more.wait()
        if self._broken is not None:
            raise StreamBroken(self._broken)
        self._credit -= 1
        await self._publish(FrameKind.DATA, chunk)

    async def closing_data(self, chunk: bytes) -> None:
        """One last data frame whatever the credit or state: a failing stream's Status body."""
        await self._publish(FrameKind.DATA, chunk)

    async def _publish(self, kind: FrameKind, payload: bytes) -> None:
        headers = {FRAME_HEADER: kind.value, SEQ_HEADER: str(self.seq)}
        self.seq += 1
        await self.nc.publish(self.subject, payload, reply=self.reply, headers=headers)


class FrameReader:
    """The other direction: checks order, hands over data and the end, and gives back credit
    (through `sender`, which carries it to the other side) as the data is consumed."""

    def __init__(self, sender: FrameSender, seq: int = 0) -> None:
        self.sender = sender
        self.expected = seq
        self._queue: asyncio.Queue[Frame | StreamBroken] = asyncio.Queue()
        self._owed = 0

    def accept(self, frame: Frame) -> Frame | None:
        """Checks the frame's place; credit goes to the sender at once, data and `end` into the
        queue. Returns frames of other kinds (`open`, `head`, `cancel`) for the caller."""
        if frame.seq != self.expected:
            self.fail(StreamBroken(f"frame {frame.seq} arrived where {self.expected} was due: a frame was lost"))
            return None
        self.expected += 1
        if frame.kind is FrameKind.CREDIT:
            try:
                self.sender.grant(Credit.model_validate_json(frame.data).frames)
            except ValueError:
                self.fail(StreamBroken(f"malformed credit frame {frame.data[:200]!r}"))
        elif frame.kind in (FrameKind.DATA, FrameKind.END):
            self._queue.put_nowait(frame)
        else:
            return frame
        return None

    def fail(self, error: StreamBroken) -> None:
        self.sender.break_off(str(error))
        self._queue.put_nowait(error)

    async def next(self) -> Frame:
        """The next data or `end` frame; raises StreamBroken."""
        item = await self._queue.get()
        if isinstance(item, StreamBroken):
            self._queue.put_nowait(item)  # later calls fail the same way
            raise item
        return item

    async def consumed(self) -> None:
        """One data frame handed on: credit back once half a window is owed."""
        self._owed += 1
        if self._owed >= WINDOW // 2:
            owed, self._owed = self._owed, 0
            await self.sender.control(FrameKind.CREDIT, Credit(frames=owed))

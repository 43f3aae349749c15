"""Reading a pull consumer with our own pull requests, handing over each message as it arrives.

nats-py's `fetch()` answers a long poll only when its whole batch is filled or its deadline
passes (its first request is a no-wait probe, which the server treats as a lingering pull once it
carries an expiry), so a 30 s poll could hold a change back for 30 s. Here one pull request for
up to `batch` messages lingers `expires` seconds with idle heartbeats; messages are returned as
soon as they come; a heartbeat proves the consumer alive without a separate request; a 409 from
the server, or silence for two heartbeats, raises ConsumerGoneError so the caller makes a new
consumer. So does a gap in consumer sequences, seen in a message or in a heartbeat's
`Nats-Last-Consumer`: with no acks, whatever the server delivered while our inbox had no route
(a child's leaf link cut while its own connection to the leaf stayed up, so no reconnect tells
anyone) is gone, and only a new consumer from the last applied sequence gets it back.

NATS does not check reply subjects: anyone may pull from a consumer of their own with our inbox
as the reply, and the server delivers their messages to us. A delivery is taken only when its
ack subject, which the server writes, names our stream and our consumer; anything else is
dropped with a warning.

Status codes and header names are nats-py's (`nats.js.api.StatusCode`, `Header`). The pull request
is ours: nats-py builds the `CONSUMER.MSG.NEXT` subject and its JSON body only inside
`PullSubscription.fetch`, with no public way to send one that returns messages as they come.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

import structlog
from clusternet_nats.api.intake import DELIVERY_HEARTBEAT
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import NotJSMessageError
from nats.js.api import DEFAULT_PREFIX, Header, StatusCode

_REQUEST_DONE = (StatusCode.NO_MESSAGES, StatusCode.REQUEST_TIMEOUT)

log = structlog.get_logger(__name__)


class ConsumerGoneError(Exception):
    """The consumer was deleted, lost its leader, or stopped answering."""


class PullReader:
    def __init__(
        self,
        nc: NATS,
        stream: str,
        consumer: str,
        batch: int = 512,
        expires: float = 30.0,
        api_prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self.nc = nc
        self.stream, self.consumer = stream, consumer
        self.batch = batch
        self.expires = expires
        self.heartbeat = max(0.5, min(DELIVERY_HEARTBEAT, expires / 3))
        # `$JS.<domain>.API` when JetStream is the hub's, reached across a leaf node.
        self._next_subject = f"{api_prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self._inbox = nc.new_inbox()
        self._queue: asyncio.Queue[Msg] = asyncio.Queue()
        self._sub: Subscription | None = None
        self._outstanding = 0
        self._delivered = 0
        """The consumer sequence of the last message received."""

    async def start(self) -> None:
        self._sub = await self.nc.subscribe(self._inbox, cb=self._queue.put)

    async def close(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def _request(self) -> None:
        request = {
            "batch": self.batch,
            "expires": int(self.expires * 1e9),
            "idle_heartbeat": int(self.heartbeat * 1e9),
        }
        await self.nc.publish(self._next_subject, json.dumps(request).encode(), reply=self._inbox)
        self._outstanding = self.batch

    async def next(self) -> list[Msg]:
        """Waits for at least one message; returns it and whatever else already arrived."""
        while True:
            if self._outstanding <= 0:
                await self._request()
            try:
                async with asyncio.timeout(2 * self.heartbeat + 1.0):
                    msg = await self._queue.get()
            except TimeoutError:
                raise ConsumerGoneError(f"no heartbeat for {2 * self.heartbeat + 1.0:.1f}s") from None
            msgs = self._accept(msg)
            while not self._queue.empty():
                msgs.extend(self._accept(self._queue.get_nowait()))
            if msgs:
                return msgs

    def _accept(self, msg: Msg) -> list[Msg]:
        headers = msg.headers or {}
        status = headers.get(Header.STATUS)
        if not status:
            if not self._ours(msg):
                return []
            self._outstanding -= 1
            self._follows(msg.metadata.sequence.consumer - 1)
            self._delivered = msg.metadata.sequence.consumer
            return [msg]
        if status == StatusCode.CONTROL_MESSAGE:  # an idle heartbeat
            self._follows(int(headers.get(Header.LAST_CONSUMER, self._delivered)))
            return []
        if status in _REQUEST_DONE:
            self._outstanding = 0
            return []
        description = headers.get(Header.DESCRIPTION, "")
        raise ConsumerGoneError(f"{status} {description}".strip())

    def _ours(self, msg: Msg) -> bool:
        try:
            meta = msg.metadata
        except NotJSMessageError:
            meta = None
        if meta is not None and meta.stream == self.stream and meta.consumer == self.consumer:
            return True
        log.warning("pull.foreign_delivery", stream=self.stream, consumer=self.consumer, reply=msg.reply)
        return False

    def _follows(self, previous: int) -> None:
        """Raises unless `previous`, the consumer sequence delivered before, is the last we got."""
        if previous != self._delivered:
            raise ConsumerGoneError(f"missed deliveries {self._delivered + 1}..{previous}")


class PushReader(PullReader):
    """The deliveries of a push consumer made by someone else (the hub, for a registered cluster,
    which may not use JetStream) to `deliver_subject`: read, checked and gap-detected like a
    pull consumer's, with nothing to request. The consumer's idle heartbeat is `heartbeat`."""

    def __init__(self, nc: NATS, stream: str, consumer: str, deliver_subject: str, heartbeat: float) -> None:
        super().__init__(nc, stream, consumer, expires=3 * heartbeat)
        self.heartbeat = heartbeat
        self._inbox = deliver_subject

    async def _request(self) -> None:
        self._outstanding = sys.maxsize

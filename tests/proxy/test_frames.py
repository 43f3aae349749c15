"""The proxy's frame protocol on a real nats-server: the hub's stream against the agent's server,
with a backend whose answers the test shapes (sizes, pace, an endless watch, silence).

What the backend is does not matter here (the kube one is tested in test_kubectl.py); what is
tested is the protocol: order and reassembly of big bodies both ways, the credit window holding
a slow client's stream at the agent, cancellation reaching the upstream, the per-request
timeout, the no-responders answer for an absent agent, frames not from the hub ignored, and a
stream whose hub fell silent abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import nats
import pytest
from clusternet_nats.agent.backends.apiserver import UpstreamRequest, UpstreamResponse
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.proxy import ProxyServer
from clusternet_nats.api.proxy import CHUNK, FRAME_HEADER, SEQ_HEADER, WINDOW, FrameKind, ProxyOpen, ProxyUser
from clusternet_nats.hub.proxy.stream import AgentGone, HubStream
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.runtime.frames import StreamBroken
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.client import Client as NATS


@dataclass
class Backend:
    """An ApiServer whose answer is `chunks` (an endless count when None), recording what happened."""

    chunks: list[bytes] | None = None
    silent: bool = False
    requests: list[UpstreamRequest] = field(default_factory=list)
    pulled: int = 0
    closed: bool = False

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        self.requests.append(request)
        if request.method == "HEAD":  # the readiness probe of `serving`
            return UpstreamResponse(200, [], _nothing())
        if self.silent:
            await asyncio.Event().wait()
        return UpstreamResponse(200, [("Content-Type", "application/octet-stream")], self._body())

    async def _body(self) -> AsyncIterator[bytes]:
        try:
            if self.chunks is not None:
                for chunk in self.chunks:
                    self.pulled += 1
                    yield chunk
                return
            while True:
                self.pulled += 1
                yield f"event {self.pulled}\n".encode()
        finally:
            self.closed = True


async def _nothing() -> AsyncIterator[bytes]:
    for chunk in ():
        yield chunk


@dataclass
class Pair:
    hub: NATS
    agent: NATS
    identity: ClusterIdentity
    proxy: ProxyServer

    def stream(self) -> HubStream:
        return HubStream(self.hub, self.identity.namespace)


def _open(**kwargs: object) -> ProxyOpen:
    return ProxyOpen.model_validate(
        {"method": "GET", "path": "/api/v1/pods", "user": ProxyUser(name="alice", groups=["dev"]), **kwargs}
    )


@contextlib.asynccontextmanager
async def serving(server: NatsServer, backend: Backend) -> AsyncIterator[Pair]:
    identity = ClusterIdentity(cluster_id=str(uuid.uuid4()), name="frames")
    hub, agent = await nats.connect(server.url), await nats.connect(server.url)
    proxy = ProxyServer(agent, identity, backend)
    task = asyncio.create_task(proxy.serve())
    try:
        await eventually(lambda: _subscribed(hub, identity), timeout=10, what="agent subscribed")
        yield Pair(hub, agent, identity, proxy)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await hub.close()
        await agent.close()


async def _subscribed(hub: NATS, identity: ClusterIdentity) -> bool:
    stream = HubStream(hub, identity.namespace)
    try:
        await stream.open(_open(method="HEAD"))
        await stream.head(5)
        return True
    except AgentGone:
        return False
    finally:
        await stream.close()


async def _read_all(stream: HubStream) -> tuple[bytes, int]:
    data, frames = [], 0
    while (frame := await stream.next()).kind is FrameKind.DATA:
        assert len(frame.data) <= CHUNK
        data.append(frame.data)
        frames += 1
        await stream.reader.consumed()
    return b"".join(data), frames


async def test_big_bodies_arrive_whole_and_in_order_both_ways(nats_server: NatsServer) -> None:
    answer = [os.urandom(n) for n in (1, 300_000, CHUNK, 5, 2_000_000)]
    backend = Backend(chunks=answer)
    async with serving(nats_server, backend) as pair:
        stream = pair.stream()
        try:
            body = os.urandom(3 * 1024 * 1024 + 17)
            await stream.open(_open(method="PUT", has_body=True))
            for start in range(0, len(body), CHUNK):
                await stream.sender.data(body[start : start + CHUNK])
            await stream.sender.control(FrameKind.END)
            head = await stream.head(10)
            received, frames = await _read_all(stream)
        finally:
            await stream.close()
    assert head.status == 200
    assert received == b"".join(answer)
    assert frames >= len(received) // CHUNK
    [request] = [r for r in backend.requests if r.method == "PUT"]
    assert request.body == body
    assert ("Impersonate-User", "alice") in request.headers and ("Impersonate-Group", "dev") in request.headers


async def test_a_slow_client_holds_the_agent_within_the_window(nats_server: NatsServer) -> None:
    backend = Backend()  # an endless watch
    async with serving(nats_server, backend) as pair:
        stream = pair.stream()
        try:
            await stream.open(_open(query="watch=1"))
            await stream.head(10)
            # Nobody reads: the agent may send a window's worth, then must stop pulling upstream.
            await eventually(lambda: backend.pulled >= WINDOW, timeout=10, what="a window sent")
            await holds(lambda: backend.pulled <= WINDOW + 1, seconds=1.0, what="agent held by the window")
            for _ in range(WINDOW):
                assert (await stream.next()).kind is FrameKind.DATA
                await stream.reader.consumed()
            await eventually(lambda: backend.pulled >= 2 * WINDOW, timeout=10, what="credit given back, more sent")
            await holds(lambda: backend.pulled <= 2 * WINDOW + 1, seconds=0.5, what="held again")
        finally:
            await stream.close()
        await eventually(lambda: backend.closed, timeout=10, what="cancel closed the upstream watch")


async def test_timeout_answers_504_and_absent_agent_is_no_responders(nats_server: NatsServer) -> None:
    backend = Backend(silent=True)
    async with serving(nats_server, backend) as pair:
        stream = pair.stream()
        try:
            await stream.open(_open(timeout=0.5))
            head = await stream.head(10)
            body, _ = await _read_all(stream)
        finally:
            await stream.close()
        assert head.status == 504 and b'"reason": "Timeout"' in body

        nobody = HubStream(pair.hub, "clusternet-nobody")
        try:
            await nobody.open(_open())
            with pytest.raises(AgentGone):
                await nobody.head(2)
        finally:
            await nobody.close()


async def test_frames_not_from_the_hub_are_ignored(nats_server: NatsServer) -> None:
    backend = Backend(chunks=[b"x"])
    async with serving(nats_server, backend) as pair:
        seen = len(backend.requests)
        ns = pair.identity.namespace
        headers = {FRAME_HEADER: FrameKind.OPEN.value, SEQ_HEADER: "0"}
        payload = _open().to_json()
        # No reply, a reply outside the cluster's prefix, a reply naming another stream: all dropped.
        for reply in ("", f"_INBOX.{uuid.uuid4().hex}", f"clusternet.reply.{ns}.other"):
            await pair.hub.publish(f"clusternet.sockets.{ns}.s1", payload, reply=reply, headers=headers)
        await barrier(pair.hub)
        await holds(lambda: len(backend.requests) == seen, seconds=0.5, what="forged opens ignored")


async def test_a_lost_frame_breaks_the_stream(nats_server: NatsServer) -> None:
    backend = Backend(chunks=[b"a"])
    async with serving(nats_server, backend) as pair:
        stream = pair.stream()
        try:
            await stream.open(_open(method="POST", has_body=True))
            stream.sender.seq += 1  # as if a frame had been dropped
            await stream.sender.data(b"body")
            head = await stream.head(10)
            body, _ = await _read_all(stream)
        except StreamBroken:
            head, body = None, b""
        finally:
            await stream.close()
    assert head is not None and head.status == 502 and b"lost" in body


async def test_an_open_the_agent_cannot_read_is_refused_at_once(nats_server: NatsServer) -> None:
    backend = Backend(chunks=[b"x"])
    async with serving(nats_server, backend) as pair:
        stream = pair.stream()
        try:
            bad = ProxyOpen.model_construct(method="GET", path="/x", user=ProxyUser(name="a"), timeout="never")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pydantic warns that it serializes what it would refuse
                await stream.open(bad)
            with pytest.raises(StreamBroken, match="invalid open"):
                await stream.head(5)
        finally:
            await stream.close()
    assert [r for r in backend.requests if r.path == "/x"] == []


async def test_a_stream_whose_hub_fell_silent_is_abandoned(
    nats_server: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog sleeps while no stream is open, and wakes for the first one opened after."""
    monkeypatch.setattr("clusternet_nats.agent.proxy.server.KEEPALIVE", 0.05)
    monkeypatch.setattr("clusternet_nats.agent.proxy.server.IDLE_LIMIT", 0.5)
    backend = Backend(silent=True)
    async with serving(nats_server, backend) as pair:
        proxy, ns = pair.proxy, pair.identity.namespace
        await eventually(lambda: not proxy.streams, timeout=10, what="the readiness probe's stream ended")
        assert not proxy.streams_open.is_set()
        # An open with no keepalives after it, as from a hub that went away at once.
        headers = {FRAME_HEADER: FrameKind.OPEN.value, SEQ_HEADER: "0"}
        reply = f"clusternet.reply.{ns}.silent"
        await pair.hub.publish(f"clusternet.sockets.{ns}.silent", _open().to_json(), reply=reply, headers=headers)
        await eventually(lambda: "silent" in proxy.streams, timeout=10, what="the stream opened")
        await eventually(lambda: not proxy.streams, timeout=10, what="the silent stream abandoned")
        assert not proxy.streams_open.is_set()

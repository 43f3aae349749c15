"""Upgraded proxy requests (kubectl exec, attach, cp, port-forward): WebSockets relayed over frames.

Two parts. The relay itself, end to end on a real nats-server: a WebSocket client → the hub's
upgrade relay (hub/proxy/upgrade.py, behind a minimal route) → frames → the agent's proxy server →
the kube backend's `open_websocket` → a small aiohttp WebSocket server the test starts (the relay's
peer, standing where a kubelet's stream would): messages both ways in order with their types, big
messages over many frames, the credit window holding a slow reader, close codes both ways, a
vanished client closing the upstream, a refusal passed unchanged, forged opens ignored. Then the
real thing through the secured hub to the real child control plane: a WebSocket watch relayed
from the child, and kubectl exec/attach refused by the child (no kubelet) with its own message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import nats
import pytest
from aiohttp import web
from clusternet_nats.agent.backends.apiserver import UpstreamRequest, UpstreamResponse
from clusternet_nats.agent.backends.kube.apiserver import KubeApiServer
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.proxy import ProxyServer
from clusternet_nats.api.proxy import (
    FRAME_HEADER,
    PROXY_PREFIX,
    SEQ_HEADER,
    FrameKind,
    ProxyOpen,
    ProxyUser,
    WebSocketUpgrade,
)
from clusternet_nats.hub.proxy.stream import HubStream
from clusternet_nats.hub.proxy.upgrade import SWITCHING, relay, websocket_upgrade
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from kubernetes_asyncio.client import ApiClient, Configuration
from nats.aio.client import Client as NATS

from tests.proxy.conftest import Proxied

CHANNELS = ["v5.channel.k8s.io", "v4.channel.k8s.io"]
HANDSHAKE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Protocol": ", ".join(CHANNELS),
}
FLOOD = 1000
"""Messages of 64 KiB the flooding peer sends (64 MiB): far more than any buffer on the way."""


@dataclass
class Peer:
    """The upstream WebSocket server, recording what it saw."""

    headers: list[tuple[str, str]] = field(default_factory=list)
    connections: int = 0
    close_codes: list[int | None] = field(default_factory=list)
    sent: int = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/echo", self.echo)
        app.router.add_get("/flood", self.flood)
        app.router.add_get("/goodbye", self.goodbye)
        app.router.add_get("/refuse", self.refuse)
        return app

    async def _accept(self, request: web.Request) -> web.WebSocketResponse:
        self.connections += 1
        self.headers = list(request.headers.items())
        socket = web.WebSocketResponse(protocols=["v4.channel.k8s.io"], max_msg_size=0)
        await socket.prepare(request)
        return socket

    async def echo(self, request: web.Request) -> web.WebSocketResponse:
        socket = await self._accept(request)
        async for message in socket:
            if message.type is aiohttp.WSMsgType.TEXT:
                await socket.send_str(message.data)
            elif message.type is aiohttp.WSMsgType.BINARY:
                await socket.send_bytes(message.data)
        self.close_codes.append(socket.close_code)
        return socket

    async def flood(self, request: web.Request) -> web.WebSocketResponse:
        socket = await self._accept(request)
        for n in range(FLOOD):
            await socket.send_bytes(n.to_bytes(4, "big") + bytes(64 * 1024 - 4))
            self.sent += 1
        await socket.close(code=4002, message=b"flooded")
        return socket

    async def goodbye(self, request: web.Request) -> web.WebSocketResponse:
        socket = await self._accept(request)
        await socket.send_str("bye")
        await socket.close(code=4002, message=b"done")
        return socket

    async def refuse(self, request: web.Request) -> web.Response:
        body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "not you", "code": 403}
        return web.json_response(body, status=403)


@dataclass
class Relay:
    url: str
    peer: Peer
    hub: NATS
    identity: ClusterIdentity


@contextlib.asynccontextmanager
async def _served(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _hub_app(nc: NATS, namespace: str) -> web.Application:
    """The hub's side as routes.py runs it for an upgrade, without authentication and clusters."""

    async def handle(request: web.Request) -> web.StreamResponse:
        stream = HubStream(nc, namespace)
        user = ProxyUser(name="alice", groups=["dev"])
        opened = ProxyOpen(method="GET", path=request.path, user=user, upgrade=websocket_upgrade(request))
        try:
            await stream.open(opened)
            head = await stream.head(10)
            if head.status == SWITCHING:
                return await relay(request, stream, head)
            body = b""
            while (frame := await stream.next()).kind is FrameKind.DATA:
                body += frame.data
                await stream.reader.consumed()
            stream.finished = True
            return web.Response(status=head.status, body=body, headers=dict(head.headers))
        finally:
            await stream.close()

    app = web.Application()
    app.router.add_get("/{path:.*}", handle)
    return app


class SendOnly:
    """An API server that takes no upgrades (as the simulated cluster's): `send` only."""

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        return UpstreamResponse(404, [], _nothing())


async def _nothing() -> AsyncIterator[bytes]:
    for chunk in ():
        yield chunk


@contextlib.asynccontextmanager
async def relaying(server: NatsServer, send_only: bool = False) -> AsyncIterator[Relay]:
    peer = Peer()
    identity = ClusterIdentity(cluster_id=str(uuid.uuid4()), name="upgrades")
    hub, agent = await nats.connect(server.url), await nats.connect(server.url)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(agent.close)
        stack.push_async_callback(hub.close)
        upstream = await stack.enter_async_context(_served(peer.app()))
        client = ApiClient(Configuration(host=upstream))
        stack.push_async_callback(client.close)
        apiserver = SendOnly() if send_only else KubeApiServer(client)
        proxy = asyncio.create_task(ProxyServer(agent, identity, apiserver).serve())

        async def stop() -> None:
            proxy.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await proxy

        stack.push_async_callback(stop)
        url = await stack.enter_async_context(_served(_hub_app(hub, identity.namespace)))
        relay_ = Relay(url, peer, hub, identity)

        async def answers() -> bool:
            async with aiohttp.ClientSession() as session, session.get(f"{url}/refuse") as response:
                return response.status == 403

        if not send_only:
            await eventually(answers, timeout=10, what="the agent serves the cluster's subjects")
        yield relay_


async def test_messages_cross_both_ways_in_order_with_type_subprotocol_and_identity(nats_server: NatsServer) -> None:
    async with (
        relaying(nats_server) as relay_,
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{relay_.url}/echo", protocols=CHANNELS) as socket,
    ):
        assert socket.protocol == "v4.channel.k8s.io"  # the peer's choice, through both hops
        sent: list[str | bytes] = []
        for n in range(50):
            message: str | bytes = f"text {n}" if n % 2 else os.urandom(n * 100)
            sent.append(message)
            if isinstance(message, str):
                await socket.send_str(message)
            else:
                await socket.send_bytes(message)
        received = []
        for _ in sent:
            reply = await socket.receive(timeout=10)
            kind = aiohttp.WSMsgType.TEXT if isinstance(sent[len(received)], str) else aiohttp.WSMsgType.BINARY
            assert reply.type is kind
            received.append(reply.data)
        assert received == sent
    headers = relay_.peer.headers
    assert ("Impersonate-User", "alice") in headers and ("Impersonate-Group", "dev") in headers


async def test_messages_of_several_mib_arrive_whole(nats_server: NatsServer) -> None:
    async with (
        relaying(nats_server) as relay_,
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{relay_.url}/echo", protocols=CHANNELS, max_msg_size=0) as socket,
    ):
        big = [os.urandom(5 * 1024 * 1024 + 3), os.urandom(3 * 1024 * 1024)]
        for message in big:
            await socket.send_bytes(message)
        for message in big:
            reply = await socket.receive(timeout=30)
            assert reply.type is aiohttp.WSMsgType.BINARY and reply.data == message


async def test_a_slow_reader_holds_the_upstream_then_gets_everything_in_order(nats_server: NatsServer) -> None:
    async with (
        relaying(nats_server) as relay_,
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{relay_.url}/flood", max_msg_size=0) as socket,
    ):
        peer = relay_.peer

        async def stalled() -> bool:
            before = peer.sent
            try:
                await holds(lambda: peer.sent == before, seconds=0.5, what="the peer is held")
            except AssertionError:
                return False
            return True

        await eventually(stalled, timeout=30, what="the credit window holding the peer")
        assert 0 < peer.sent < FLOOD  # held on the way: not everything was taken in
        numbers = []
        while (message := await socket.receive(timeout=30)).type is aiohttp.WSMsgType.BINARY:
            numbers.append(int.from_bytes(message.data[:4], "big"))
        assert numbers == list(range(FLOOD))
        assert message.type is aiohttp.WSMsgType.CLOSE and message.data == 4002 and message.extra == "flooded"


async def test_close_codes_cross_both_ways(nats_server: NatsServer) -> None:
    async with relaying(nats_server) as relay_, aiohttp.ClientSession() as session:
        async with session.ws_connect(f"{relay_.url}/goodbye") as socket:
            assert (await socket.receive(timeout=10)).data == "bye"
            closing = await socket.receive(timeout=10)
            assert closing.type is aiohttp.WSMsgType.CLOSE and (closing.data, closing.extra) == (4002, "done")
        async with session.ws_connect(f"{relay_.url}/echo") as socket:
            await socket.send_str("hello")
            assert (await socket.receive(timeout=10)).data == "hello"
            await socket.close(code=4001, message=b"client done")
        await eventually(lambda: relay_.peer.close_codes == [4001], timeout=10, what="the client's code at the peer")


async def test_a_vanished_client_closes_the_upstream(nats_server: NatsServer) -> None:
    async with relaying(nats_server) as relay_:
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(connector=connector) as session:
            socket = await session.ws_connect(f"{relay_.url}/echo")
            await socket.send_str("hello")
            assert (await socket.receive(timeout=10)).data == "hello"
        # The session closed the connection without a close frame.
        await eventually(lambda: relay_.peer.close_codes == [1001], timeout=15, what="the upstream closed, going away")


async def test_a_refusal_reaches_the_client_unchanged(nats_server: NatsServer) -> None:
    async with relaying(nats_server) as relay_, aiohttp.ClientSession() as session:
        async with session.get(f"{relay_.url}/refuse", headers=HANDSHAKE) as response:
            assert response.status == 403
            assert (await response.json())["message"] == "not you"
        assert relay_.peer.connections == 0


async def test_an_api_server_without_websockets_refuses_upgrades(nats_server: NatsServer) -> None:
    async with relaying(nats_server, send_only=True) as relay_, aiohttp.ClientSession() as session:

        async def refused() -> dict[str, object] | None:
            async with session.get(f"{relay_.url}/echo", headers=HANDSHAKE) as response:
                return await response.json() if response.status == 400 else None

        status = await eventually(refused, timeout=10, what="the agent's refusal")
        assert status["message"] == "this cluster's API server takes no upgrades (/echo)"


async def test_an_upgrade_not_from_the_hub_is_ignored(nats_server: NatsServer) -> None:
    async with relaying(nats_server) as relay_:
        ns = relay_.identity.namespace
        upgrade = WebSocketUpgrade(protocols=CHANNELS)
        opened = ProxyOpen(method="GET", path="/echo", user=ProxyUser(name="mallory"), upgrade=upgrade)
        headers = {FRAME_HEADER: FrameKind.OPEN.value, SEQ_HEADER: "0"}
        for reply in ("", f"_INBOX.{uuid.uuid4().hex}", f"clusternet.reply.{ns}.other"):
            await relay_.hub.publish(f"clusternet.sockets.{ns}.s1", opened.to_json(), reply=reply, headers=headers)
        await barrier(relay_.hub)
        await holds(lambda: relay_.peer.connections == 0, seconds=0.5, what="forged upgrades ignored")


# --- through the secured hub to the real child control plane ---


async def test_a_websocket_watch_is_relayed_from_the_child(proxied: Proxied) -> None:
    """kube-apiserver serves watches over WebSocket too: the real route, the real agent and the
    child's own WebSocket, with no kubelet needed."""
    name = f"ws-{uuid.uuid4().hex[:6]}"
    base = f"{PROXY_PREFIX}{proxied.identity.cluster_id}/proxy/direct"
    path = f"{base}/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3D{name}"
    async with proxied.hub.session() as session, session.ws_connect(path, origin=proxied.hub.url) as socket:
        code, _, err = await proxied.kubectl("create", "configmap", name, "-n", "default")
        assert code == 0, err
        message = await socket.receive(timeout=20)
        assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
        data = message.data if isinstance(message.data, bytes) else message.data.encode()
        event = json.loads(data)
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == name
    await proxied.kubectl("delete", "configmap", name, "-n", "default")
    # The hub authorizes an upgrade as any proxy request: carol may use no cluster's socket.
    async with proxied.hub.session("carol") as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(path, origin=proxied.hub.url)
        assert refused.value.status == 403


async def test_exec_attach_and_cp_get_the_childs_refusal(proxied: Proxied) -> None:
    """No kubelet: the child refuses (the pod does not exist), over the WebSocket path, and
    kubectl shows the child's own message."""
    code, _, err = await proxied.kubectl("exec", "-n", "default", "px-nowhere", "--", "true")
    assert code != 0 and 'pods "px-nowhere" not found' in err, err
    code, _, err = await proxied.kubectl("attach", "-n", "default", "px-nowhere")
    assert code != 0 and 'pods "px-nowhere" not found' in err, err
    # A pod that exists but is on no node (no scheduler, no kubelet): kubectl goes on to the
    # upgrade itself, which the child refuses.
    pod = f"px-{uuid.uuid4().hex[:6]}"
    await proxied.kubectl("create", "serviceaccount", "default", "-n", "default")  # no controller-manager
    code, _, err = await proxied.kubectl("run", pod, "-n", "default", "--image=busybox", "--restart=Never")
    assert code == 0, err
    try:
        code, _, err = await proxied.kubectl("exec", "-n", "default", pod, "--", "true")
        assert code != 0 and f"pod {pod} does not have a host assigned" in err, err
        (proxied.workdir / "cp-me").write_text("x")
        code, _, err = await proxied.kubectl("cp", str(proxied.workdir / "cp-me"), f"default/{pod}:/tmp/cp-me")
        assert code != 0 and f"pod {pod} does not have a host assigned" in err, err
    finally:
        await proxied.kubectl("delete", "pod", pod, "-n", "default", "--wait=false")
    base = f"{PROXY_PREFIX}{proxied.identity.cluster_id}/proxy/direct"
    path = f"{base}/api/v1/namespaces/default/pods/px-nowhere/exec?command=true&stdout=true"
    async with proxied.hub.session() as session, session.get(path, headers=HANDSHAKE) as response:
        assert response.status == 404
        assert (await response.json())["message"] == 'pods "px-nowhere" not found'

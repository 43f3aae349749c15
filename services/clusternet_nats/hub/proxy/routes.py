"""`/apis/proxies.clusternet.io/v1alpha1/sockets/<cluster-id>/proxy/...`: a child's API server
through the hub, as Clusternet's aggregated API serves it.

`proxy/direct/<path>` reaches the child's own API server; `proxy/<scheme>/<host>/<path>` too when
`<scheme>://<host>` is the API server the cluster reports (`status.apiserverURL`); the agent
reaches nothing else, and says so. The gate has already authenticated the user and authorized
`sockets/proxy` on this cluster id (hub/auth); the agent calls the child as that user
(impersonation) or with the child credential the user passed Clusternet's way, so the child's
RBAC decides. The answer streams back frame by frame within the credit window: the hub holds at
most a window of a watch, and a client that goes away cancels the exchange at the agent.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import re

import structlog
from aiohttp import web
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.proxy import (
    CHUNK,
    CLUSTERNET_CERTIFICATE,
    CLUSTERNET_PRIVATE_KEY,
    CLUSTERNET_TOKEN,
    DIRECT,
    KEEPALIVE,
    PROXIES_GROUP,
    PROXY_PREFIX,
    SOCKETS_RESOURCE,
    ChildCredential,
    Credit,
    FrameKind,
    ProxyEnd,
    ProxyOpen,
    ProxyUser,
    answer_header,
    forwardable,
)
from clusternet_nats.api.registry import by_kind
from clusternet_nats.hub.auth.gate import user_of
from clusternet_nats.hub.auth.user import UserInfo
from clusternet_nats.hub.errors import ApiError
from clusternet_nats.hub.proxy.clusters import ClusterIndex
from clusternet_nats.hub.proxy.stream import AgentGone, HubStream
from clusternet_nats.hub.proxy.upgrade import SWITCHING, relay, websocket_upgrade
from clusternet_nats.runtime.frames import StreamBroken, end_error
from clusternet_nats.store import Informer
from clusternet_nats.store.views import ObjectViews
from nats.aio.client import Client as NATS
from yarl import URL

log = structlog.get_logger(__name__)

DEFAULT_TIMEOUT = 60.0
"""kube-apiserver's own limit for a request that is not long-running (`--request-timeout`)."""
HEAD_GRACE = 10.0
"""How much longer than the exchange's timeout the hub waits for the agent's answer."""
LONG_RUNNING_HEAD = 60.0
"""How long the hub waits for a watch's or a follow's answer to begin."""
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ProxyRoutes:
    def __init__(self, nc: NATS, views: ObjectViews, clusters: Informer[ManagedCluster]) -> None:
        self.nc, self.views = nc, views
        self.clusters = ClusterIndex(clusters)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", PROXY_PREFIX + "{name}/proxy/{target:.*}", self.proxy)
        app.router.add_route("*", PROXY_PREFIX + "{name}/proxy", self.proxy)

    async def proxy(self, request: web.Request) -> web.StreamResponse:
        cluster_id = request.match_info["name"]
        cluster = await self.clusters.find(cluster_id)
        if cluster is None:
            details = {"name": cluster_id, "group": PROXIES_GROUP, "kind": SOCKETS_RESOURCE}
            raise ApiError(404, "NotFound", f'no cluster has the id "{cluster_id}"', details)
        namespace = cluster.metadata.namespace or ""
        path = await self._target_path(request, cluster_id, namespace, cluster.metadata.name or "")
        upgrade = websocket_upgrade(request)
        opened = ProxyOpen(
            method=request.method,
            path=path,
            query=request.rel_url.raw_query_string,
            headers=[(k, v) for k, v in request.headers.items() if forwardable(k)],
            user=_proxy_user(user_of(request)),
            credential=_credential(request, user_of(request)),
            timeout=None if upgrade else _timeout(request),
            has_body=request.body_exists,
            upgrade=upgrade,
        )
        stream = HubStream(self.nc, namespace)
        bound = log.bind(cluster=cluster_id, stream=stream.id, method=request.method, path=path)
        try:
            return await self._exchange(request, stream, opened, cluster_id)
        except AgentGone:
            raise ApiError(503, "ServiceUnavailable", f"agent of cluster {cluster_id} is disconnected") from None
        except TimeoutError:
            raise ApiError(504, "Timeout", f"the agent of cluster {cluster_id} did not answer in time") from None
        except StreamBroken as err:
            bound.info("proxy.broken", error=str(err))
            raise ApiError(502, "BadGateway", f"the proxy stream to cluster {cluster_id} broke: {err}") from None
        finally:
            await stream.close()

    async def _target_path(self, request: web.Request, cluster_id: str, namespace: str, name: str) -> str:
        """The path on the child's API server, encoded as the client sent it."""
        raw = request.rel_url.raw_path
        marker = f"/{cluster_id}/proxy"
        rest = raw[raw.index(marker) + len(marker) :].lstrip("/")
        first, _, rest = rest.partition("/")
        if first == DIRECT:
            return "/" + rest
        scheme = first
        host, _, rest = rest.partition("/")
        cluster = await self.views.get(by_kind(ManagedCluster.KIND), namespace, name)
        reported = (cluster.status.apiserver_url if isinstance(cluster, ManagedCluster) else None) or ""
        if scheme and host and reported:
            url = URL(reported)
            if url.scheme == scheme and url.raw_authority == host:
                return url.raw_path.rstrip("/") + "/" + rest
        raise ApiError(
            502,
            "BadGateway",
            f"cluster {cluster_id}'s agent reaches only its own API server ({reported or 'not reported yet'})"
            f" through the proxy: use proxy/{DIRECT}/, not {scheme}://{host}",
        )

    async def _exchange(
        self, request: web.Request, stream: HubStream, opened: ProxyOpen, cluster_id: str
    ) -> web.StreamResponse:
        await stream.open(opened)
        helpers = [asyncio.create_task(_keep_alive(request, stream))]
        if opened.has_body:
            helpers.append(asyncio.create_task(_send_body(request, stream)))
        try:
            wait = (opened.timeout + HEAD_GRACE) if opened.timeout else LONG_RUNNING_HEAD
            head = await stream.head(wait)
            if opened.upgrade is not None and head.status == SWITCHING:
                return await relay(request, stream, head)
            response = web.StreamResponse(status=head.status)
            for key, value in head.headers:
                if answer_header(key):
                    response.headers.add(key, value)
            await response.prepare(request)
            await _relay(request, stream, response)
            return response
        finally:
            for helper in helpers:
                helper.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await helper


async def _relay(request: web.Request, stream: HubStream, response: web.StreamResponse) -> None:
    """Data frames to the client as it takes them; credit back only once written."""
    try:
        while (frame := await stream.next()).kind is FrameKind.DATA:
            await response.write(frame.data)
            await stream.reader.consumed()
    except (ConnectionError, StreamBroken) as err:
        _abort(request, repr(err))
        return
    stream.finished = True
    error = end_error(frame)
    if error:  # the body stopped short: the client must not take it for whole
        _abort(request, error)
        return
    await response.write_eof()


def _abort(request: web.Request, why: str) -> None:
    log.info("proxy.aborted", path=request.path, reason=why)
    if request.transport is not None:
        request.transport.abort()


async def _send_body(request: web.Request, stream: HubStream) -> None:
    error = None
    try:
        async for chunk in request.content.iter_chunked(CHUNK):
            await stream.sender.data(chunk)
    except (ConnectionError, StreamBroken) as err:
        error = repr(err)
    await stream.sender.control(FrameKind.END, ProxyEnd(error=error))


async def _keep_alive(request: web.Request, stream: HubStream) -> None:
    """Tells the agent the hub is still there (it abandons a silent stream), and finds a vanished
    agent (no-responders) or client (transport closed), before the answer's head and after."""
    while True:
        await asyncio.sleep(KEEPALIVE)
        if request.transport is None or request.transport.is_closing():
            stream.abort(StreamBroken("the client went away"))
            return
        await stream.sender.control(FrameKind.CREDIT, Credit(frames=0))


def _proxy_user(user: UserInfo) -> ProxyUser:
    return ProxyUser(name=user.name, uid=user.uid, groups=list(user.groups))


def _credential(request: web.Request, user: UserInfo) -> ChildCredential | None:
    """A child credential passed Clusternet's way: its headers, or user extras through a front proxy."""

    def given(header: str) -> str | None:
        extra = user.extra.get(header.lower())
        return request.headers.get(header) or (extra[0] if extra else None)

    token, cert, key = given(CLUSTERNET_TOKEN), given(CLUSTERNET_CERTIFICATE), given(CLUSTERNET_PRIVATE_KEY)
    if token:
        return ChildCredential(token=token)
    if cert and key:
        certificate, private_key = _b64(cert, CLUSTERNET_CERTIFICATE), _b64(key, CLUSTERNET_PRIVATE_KEY)
        return ChildCredential(certificate=certificate, private_key=private_key)
    return None


def _b64(value: str, header: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ApiError(400, "BadRequest", f"invalid base64 in header {header}: {err}") from None


def _timeout(request: web.Request) -> float | None:
    """The exchange's limit: none for what kube-apiserver calls long-running (watch, follow),
    else the client's `?timeout=` (a Go duration, as kubectl's --request-timeout sends it)."""
    query = request.query
    if query.get("watch", "").lower() in ("1", "true") or query.get("follow", "").lower() in ("1", "true"):
        return None
    if "/watch/" in request.path:
        return None
    given = query.get("timeout", "")
    parts = _DURATION.findall(given)
    if given and parts and "".join(n + u for n, u in parts) == given:
        return sum(float(n) * _UNITS[u] for n, u in parts)
    return DEFAULT_TIMEOUT

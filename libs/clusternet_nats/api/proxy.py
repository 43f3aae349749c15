"""The proxy's wire contract: one HTTP exchange between the hub and a cluster's agent, in frames.

Clusternet's `sockets/<cluster-id>/proxy` carries a user's request to a child's API server over
its reverse tunnel; here the tunnel is the cluster's leaf link and the exchange is a *stream* of
NATS messages, numbered in each direction:

- hub → agent on `clusternet.sockets.<namespace>.<stream>` (only the hub publishes there, only that
  cluster subscribes), every message with the reply `clusternet.reply.<namespace>.<stream>` (the
  proof it is the hub's: runtime/tunnel.py `from_hub`);
- agent → hub on that reply subject (only that cluster may publish there).

A frame's kind and sequence number ride in NATS headers (`Cn-Frame`, `Cn-Seq`); control frames
carry a model of this module as JSON, `data` frames carry raw bytes (a body chunk, at most
`CHUNK` bytes, well under NATS's 1 MiB max_payload). The hub opens with `open`; the agent answers
`head` (status and headers) then `data` frames and `end`. The hub's request body goes the same
way (`data`..., `end`) after `open`; after a 101 answer (exec, attach, port-forward) both sides
keep sending `data` until either ends. Flow control is a credit window per direction: a side may
have at most `WINDOW` data frames unacknowledged; the receiver returns credit (`credit`) as it
hands frames on, so a slow kubectl makes the agent stop reading the child's API server instead of
the hub buffering a whole watch. A sequence gap (a dropped core-NATS message) aborts the stream.
`cancel` (hub) abandons it: the agent closes the upstream exchange.
"""

from __future__ import annotations

import json
from enum import StrEnum

from clusternet_nats.api.meta import B64Bytes, Model
from clusternet_nats.api.schemas import register_message
from clusternet_nats.api.subjects import CLUSTER_REPLY, SOCKETS
from pydantic import Field

PROXIES_GROUP = "proxies.clusternet.io"
PROXIES_VERSION = "v1alpha1"
SOCKETS_RESOURCE = "sockets"
PROXY_PREFIX = f"/apis/{PROXIES_GROUP}/{PROXIES_VERSION}/{SOCKETS_RESOURCE}/"
"""`<prefix><cluster-id>/proxy/direct/...`, as Clusternet's aggregated API names it."""
DIRECT = "direct"

FRAME_HEADER = "Cn-Frame"
SEQ_HEADER = "Cn-Seq"
CHUNK = 128 * 1024
"""Largest data frame: big bodies go in many frames, each far under max_payload."""
WINDOW = 8
"""Data frames a side may send beyond what the other has given back credit for (1 MiB in flight)."""
KEEPALIVE = 5.0
"""Seconds between the hub's keepalives on an open stream; the hub learns a vanished agent from
the server's no-responders answer to one, the agent a vanished hub from their absence."""
IDLE_LIMIT = 6 * KEEPALIVE
"""The agent abandons a stream it has heard nothing about for this long (the hub went away)."""
MAX_MESSAGE = 32 * 1024 * 1024
"""Largest WebSocket message an upgraded stream relays (each end reassembles a message whole)."""

CLUSTERNET_TOKEN = "Clusternet-Token"
CLUSTERNET_CERTIFICATE = "Clusternet-Certificate"
CLUSTERNET_PRIVATE_KEY = "Clusternet-PrivateKey"
"""Clusternet's headers (or user extras `clusternet-token`, ... through a front proxy) passing a
credential of the child itself, base64 for the certificate and key: the agent then calls the child
with it instead of impersonating."""


_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"}
)
_CREDENTIALS = frozenset({"authorization", "proxy-authorization", "cookie", "content-length"})
_CREDENTIAL_PREFIXES = ("impersonate-", "clusternet-", "x-remote-")
_WEBSOCKET_PREFIX = "sec-websocket-"
"""A WebSocket's handshake headers belong to one hop: the agent's own socket sets its own."""


def forwardable(name: str) -> bool:
    """Whether a client's request header may reach the child: not hop-by-hop, and nothing that
    names a credential or an identity (the agent sets who the child sees)."""
    lower = name.lower()
    return (
        lower not in _HOP_BY_HOP
        and lower not in _CREDENTIALS
        and not lower.startswith(_CREDENTIAL_PREFIXES)
        and not lower.startswith(_WEBSOCKET_PREFIX)
    )


def answer_header(name: str) -> bool:
    """Whether an answer's header goes back to the client (the hub sets its own framing)."""
    return name.lower() not in _HOP_BY_HOP and name.lower() != "content-length"


class FrameKind(StrEnum):
    OPEN = "open"
    """hub → agent: `ProxyOpen`."""
    HEAD = "head"
    """agent → hub: `ProxyHead`."""
    DATA = "data"
    """Either way: raw bytes of the body (or of the upgraded connection)."""
    CREDIT = "credit"
    """Either way: `Credit`; zero frames is the hub's keepalive."""
    END = "end"
    """Either way: `ProxyEnd`; this direction's body is complete (or failed)."""
    CANCEL = "cancel"
    """hub → agent: the client went away; abandon the exchange."""


class ProxyUser(Model):
    """Who the hub authenticated: the agent impersonates them in the child."""

    name: str
    uid: str = ""
    groups: list[str] = Field(default_factory=list)


class ChildCredential(Model):
    """A credential of the child passed through (Clusternet's headers): used instead of impersonating."""

    token: str | None = None
    certificate: B64Bytes | None = None
    """PEM client certificate."""
    private_key: B64Bytes | None = None
    """PEM key of `certificate`."""


class WebSocketUpgrade(Model):
    """The client asked for a WebSocket (kubectl exec, attach, cp, port-forward): the agent opens
    one to the child offering these subprotocols, and answers 101 with the one the child chose
    (header `Sec-WebSocket-Protocol`) or the child's refusal as it came."""

    protocols: list[str] = Field(default_factory=list)


class ProxyOpen(Model):
    """The request, without its body (which follows in data frames)."""

    method: str
    path: str
    """Begins with `/`: the path on the target, the proxy prefix removed."""
    query: str = ""
    headers: list[tuple[str, str]] = Field(default_factory=list)
    """The client's headers minus hop-by-hop ones and its own credentials."""
    scheme: str | None = None
    """With `host`: `.../proxy/<scheme>/<host>/<path>`; both absent: the child's own API server."""
    host: str | None = None
    user: ProxyUser
    credential: ChildCredential | None = None
    timeout: float | None = None
    """Seconds for the whole exchange; absent: none (a watch, `logs -f`, an upgraded stream)."""
    has_body: bool = False
    """Data frames and an `end` follow; without, the request body is empty."""
    upgrade: WebSocketUpgrade | None = None
    """Set: after a 101 head both directions carry WebSocket messages (runtime/wsrelay.py)."""


class ProxyHead(Model):
    status: int
    headers: list[tuple[str, str]] = Field(default_factory=list)


class Credit(Model):
    frames: int = Field(ge=0, le=WINDOW)


class ProxyEnd(Model):
    error: str | None = None
    """Why the body stopped short (an upstream failure, a timeout, a sequence gap)."""
    close_code: int | None = None
    """Upgraded streams: the WebSocket close code this side's socket closed with."""
    close_reason: str | None = None


def socket_subject(namespace: str, stream: str) -> str:
    """Where the hub sends a stream's frames to the cluster owning `namespace`."""
    return SOCKETS.format(namespace=namespace, stream=stream)


def stream_reply(namespace: str, stream: str) -> str:
    """Where that cluster's agent answers a stream (and the reply every hub frame carries)."""
    return CLUSTER_REPLY.format(namespace=namespace, id=stream)


for _model in (ProxyOpen, ProxyHead, Credit, ProxyEnd):
    register_message(_model, PROXIES_GROUP, PROXIES_VERSION)


def failure_status(code: int, reason: str, message: str) -> bytes:
    """A Kubernetes `Status` body, for an agent answering in its API server's stead."""
    body = {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure"}
    return json.dumps({**body, "message": message, "reason": reason, "code": code}).encode()

"""The child's API server as the hub's proxy reaches it: one HTTP exchange at a time.

The proxy (issue: kubectl through the hub over the NATS tunnel) carries a user's request to the
agent, which hands it to its backend's `ApiServer` and streams the answer back. A real cluster's
is its kube-apiserver, called with the agent's own credentials and the user's impersonation
headers, so the child's RBAC decides; a simulated cluster answers from the objects it holds, so
the proxy can be exercised at fleet scale without a control plane per cluster. The agent's proxy
layer builds the request (path without the proxy prefix, impersonation headers set, the user's
own credentials removed); the backend only performs it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from clusternet_nats.runtime.wsrelay import Socket

Headers = Sequence[tuple[str, str]]
"""HTTP headers in order; a name may repeat (`Impersonate-Group`)."""


@dataclass(frozen=True)
class UpstreamRequest:
    """One request for the child's API server."""

    method: str
    path: str
    """Begins with `/`, e.g. `/api/v1/namespaces/default/pods`; no proxy prefix, no query."""
    query: str = ""
    """The raw query string, without `?` (`watch=1&resourceVersion=7`)."""
    headers: Headers = ()
    body: bytes = b""
    timeout: float | None = None
    """Seconds for the whole exchange; None: no limit (a watch, `logs -f`)."""
    client_certificate: tuple[bytes, bytes] | None = None
    """(PEM certificate, PEM key) a user passed through (Clusternet-Certificate): call with it,
    not with the agent's own credentials. With an `Authorization` header likewise."""


@dataclass
class UpstreamResponse:
    """The answer's head, and its body as it arrives (a watch's events, a log's lines)."""

    status: int
    headers: Headers
    body: AsyncIterator[bytes]
    """Chunks in order; ends when the answer is complete. Stop iterating and call `close`
    to abandon it (the client went away)."""

    async def close(self) -> None:
        """Releases the exchange; safe to call twice and after the body ended."""
        aclose = getattr(self.body, "aclose", None)
        if aclose is not None:
            await aclose()


class ApiServer(Protocol):
    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        """Performs the request; an unreachable server answers 503 rather than raising."""


@dataclass
class UpstreamSocket:
    """An open WebSocket to the child's API server (exec, attach, cp, port-forward)."""

    socket: Socket
    protocol: str | None
    """The subprotocol the server chose among those offered."""
    release: Callable[[], Awaitable[None]] | None = None
    """Frees what the socket holds beyond itself (a session of its own)."""

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Closes the socket (a no-op once closed) and releases it; safe to call twice."""
        await self.socket.close(code=code, message=reason.encode()[:123])
        release, self.release = self.release, None
        if release is not None:
            await release()


@runtime_checkable
class WebSocketApiServer(ApiServer, Protocol):
    """An API server the proxy can open WebSockets to; a backend without (the simulated cluster,
    which runs no pods) has every upgrade refused by the agent with a 400 Status."""

    async def open_websocket(
        self, request: UpstreamRequest, protocols: Sequence[str]
    ) -> UpstreamSocket | UpstreamResponse:
        """Opens a WebSocket to `request.path` offering `protocols`, with the same credentials and
        impersonation as `send`. The server's refusal (any status but 101) comes back as its
        answer, status and body unchanged; an unreachable server answers 503 rather than raising."""

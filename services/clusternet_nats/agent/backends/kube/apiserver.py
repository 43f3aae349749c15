"""The kube backend's `ApiServer`: the child's kube-apiserver, over the agent's own connection.

Requests go out as they came (method, path, query, headers, body) with the agent's kubeconfig
credentials added, and answers stream back unread: a watch's events or a log's lines as the server
sends them, gzip left compressed (the client asked for it and decodes it), nothing buffered, so the
proxy's credit window reaches back to this socket. A request carrying its own credential (a token in
`Authorization`, or a client certificate, Clusternet's pass-through) goes on a connection without the
agent's certificate and token, so the child sees that credential alone.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import replace

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from clusternet_nats.agent.backends.apiserver import UpstreamRequest, UpstreamResponse, UpstreamSocket
from clusternet_nats.api.proxy import MAX_MESSAGE, answer_header, failure_status
from kubernetes_asyncio.client import ApiClient, Configuration
from multidict import CIMultiDict
from yarl import URL


class KubeApiServer:
    def __init__(self, client: ApiClient) -> None:
        self._client = client
        self._configuration: Configuration = client.configuration
        self._session: aiohttp.ClientSession | None = None
        self._proxy: URL | None = None

    def _pooled(self) -> aiohttp.ClientSession:
        """kubernetes_asyncio's connections (its pool and TLS context) in a session without its
        `trust_env`, which costs every request two thread hops (netrc, proxy environment): ~0.7 ms of
        a 1.7 ms GET. The proxy to the API server (kubeconfig's, else the environment's) is found once."""
        if self._session is None:
            pool = self._client.rest_client.pool_manager
            self._session = aiohttp.ClientSession(connector=pool.connector, connector_owner=False, read_bufsize=2**21)
            host = URL(str(self._configuration.host))
            if self._configuration.proxy:
                self._proxy = URL(self._configuration.proxy)
            else:
                with contextlib.suppress(LookupError):
                    self._proxy = get_env_proxy_for_url(host)[0]
        return self._session

    async def close(self) -> None:
        """Closes the session; the connections are the kube client's, closed with it."""
        if self._session is not None:
            await self._session.close()

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        prepared = await self._prepare(request)
        if isinstance(prepared, UpstreamResponse):
            return prepared
        url, headers, session, own_credential = prepared
        try:
            response = await session.request(
                request.method,
                url,
                headers=headers,
                data=request.body or None,
                timeout=aiohttp.ClientTimeout(total=request.timeout),
                allow_redirects=False,
                auto_decompress=False,
                proxy=None if own_credential else self._proxy,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            if own_credential:
                await session.close()
            return _status(503, "ServiceUnavailable", f"the cluster's API server is unreachable: {err!r}")
        answer = [(k, v) for k, v in response.headers.items() if answer_header(k)]
        return UpstreamResponse(response.status, answer, _Body(response, session if own_credential else None))

    async def open_websocket(
        self, request: UpstreamRequest, protocols: Sequence[str]
    ) -> UpstreamSocket | UpstreamResponse:
        """See `WebSocketApiServer`. aiohttp drops the body of a refused handshake, so a refusal is
        asked again as a plain upgrade request whose answer (the child's Status) is passed on."""
        prepared = await self._prepare(request)
        if isinstance(prepared, UpstreamResponse):
            return prepared
        url, headers, session, own_credential = prepared
        release = session.close if own_credential else None
        try:
            socket = await session.ws_connect(
                url,
                protocols=tuple(protocols),
                headers=headers,
                max_msg_size=MAX_MESSAGE,
                proxy=None if own_credential else self._proxy,
            )
        except aiohttp.WSServerHandshakeError as err:
            if release is not None:
                await release()
            if err.status == 101:
                broke = f"the cluster's API server broke the WebSocket handshake: {err.message}"
                return _status(502, "BadGateway", broke)
            refused = await self.send(replace(request, headers=[*request.headers, *_handshake(protocols)]))
            if refused.status == 101:  # accepted this time: nothing can relay it now
                await refused.close()
                return _status(502, "BadGateway", "the cluster's API server refused the WebSocket, then accepted it")
            return refused
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            if release is not None:
                await release()
            return _status(503, "ServiceUnavailable", f"the cluster's API server is unreachable: {err!r}")
        return UpstreamSocket(socket, socket.protocol, release)

    async def _prepare(
        self, request: UpstreamRequest
    ) -> tuple[URL, CIMultiDict[str], aiohttp.ClientSession, bool] | UpstreamResponse:
        """The URL, headers and session a request goes with: the agent's pooled connection and
        credentials, or a session of its own (closed with the answer) for a passed credential."""
        url = URL(str(self._configuration.host).rstrip("/") + request.path, encoded=False)
        if request.query:
            url = URL(str(url) + "?" + request.query, encoded=True)
        headers = CIMultiDict(request.headers)
        own_credential = "Authorization" in headers or request.client_certificate is not None
        if own_credential:
            try:
                context = await asyncio.to_thread(self._ssl, request.client_certificate)
            except (ValueError, OSError) as err:
                return _status(400, "BadRequest", str(err))
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context))
        else:
            session = self._pooled()
            auth = (await self._configuration.auth_settings()).get("BearerToken")
            if auth:
                headers["Authorization"] = auth["value"]
        return url, headers, session, own_credential

    def _ssl(self, certificate: tuple[bytes, bytes] | None) -> ssl.SSLContext:
        """The API server's CA and verification, and no client certificate but the user's."""
        config = self._configuration
        context = ssl.create_default_context(cafile=config.ssl_ca_cert)
        if not config.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if certificate is not None:
            _load_pem_pair(context, *certificate)
        return context


def _load_pem_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """`load_cert_chain` reads files only: the pair goes through a private temporary directory."""
    with tempfile.TemporaryDirectory(prefix="cnet-proxy-") as directory:
        cert_file, key_file = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        for path, data in ((cert_file, cert), (key_file, key)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
                out.write(data)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as err:
            raise ValueError(f"the client certificate and key passed do not form a key pair: {err}") from None


def _handshake(protocols: Sequence[str]) -> list[tuple[str, str]]:
    """A WebSocket handshake's headers, for asking a refused upgrade again as a plain request."""
    headers = [("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13")]
    headers.append(("Sec-WebSocket-Key", base64.b64encode(os.urandom(16)).decode()))
    if protocols:
        headers.append(("Sec-WebSocket-Protocol", ", ".join(protocols)))
    return headers


def _status(code: int, reason: str, message: str) -> UpstreamResponse:
    body = _Body.of(failure_status(code, reason, message))
    return UpstreamResponse(code, [("Content-Type", "application/json")], body)


class _Body:
    """The answer's chunks as they arrive; `aclose` releases the connection even if never read."""

    def __init__(self, response: aiohttp.ClientResponse | None, session: aiohttp.ClientSession | None) -> None:
        self.response, self.session = response, session
        self.pending: list[bytes] = []

    @classmethod
    def of(cls, data: bytes) -> _Body:
        body = cls(None, None)
        body.pending.append(data)
        return body

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        if self.pending:
            return self.pending.pop()
        if self.response is not None:
            chunk = await self.response.content.readany()
            if chunk:
                return chunk
        await self.aclose()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if self.response is not None:
            self.response.close()
            self.response = None
        if self.session is not None:
            session, self.session = self.session, None
            await session.close()

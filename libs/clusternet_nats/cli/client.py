"""The hub's HTTP API from the CLI's side: JSON in and out, failures as one readable error.

Every failure, whether the hub refused a request (a Kubernetes Status) or could not be reached,
becomes a HubError whose text is what kubectl would print, so commands never show a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from clusternet_nats.api import KindInfo
from clusternet_nats.api.paths import collection_path, events_path
from clusternet_nats.cli.config import ClientSettings, ConfigError, ca_data_pem
from opentelemetry import propagate

TIMEOUT = aiohttp.ClientTimeout(total=60, connect=10)
MAX_RETRIES = 10
"""How many times an answer with Retry-After is tried again (client-go's default)."""
MAX_RETRY_WAIT = 10.0

Object = dict[str, Any]


class HubError(Exception):
    """A request that failed; `str()` is the line to show, `causes` the invalid fields."""

    def __init__(self, message: str, code: int = 0, reason: str = "", causes: list[Object] | None = None) -> None:
        super().__init__(message)
        self.message, self.code, self.reason = message, code, reason
        self.causes = causes or []

    @classmethod
    def from_status(cls, code: int, body: Object) -> HubError:
        details = body.get("details") or {}
        return cls(str(body.get("message", "")), code, str(body.get("reason", "")), list(details.get("causes") or []))

    def __str__(self) -> str:
        if not self.code:
            return f"error: {self.message}"
        if self.code == 401:  # kubectl's words: nothing about the request is worth more than this
            return "error: You must be logged in to the server (Unauthorized)"
        head = f"Error from server ({self.reason or self.code}): {self.message}"
        if len(self.causes) < 2:
            return head
        return "\n".join([head, *(f"  {c.get('field', '')}: {c.get('message', '')}" for c in self.causes)])


def ssl_context(settings: ClientSettings) -> ssl.SSLContext | None:
    """What to trust and what to present over HTTPS (None for an http:// server); reads files, so
    call it before the event loop. Raises HubError naming the file that cannot be used."""
    if not settings.server.startswith("https://"):
        return None
    try:
        context = ssl.create_default_context(
            cafile=str(settings.certificate_authority) if settings.certificate_authority else None,
            cadata=ca_data_pem(settings.certificate_authority_data) if settings.certificate_authority_data else None,
        )
        if settings.insecure_skip_tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if settings.client_certificate or settings.client_key:
            if not (settings.client_certificate and settings.client_key):
                raise HubError("client-certificate and client-key go together")
            context.load_cert_chain(settings.client_certificate, settings.client_key)
    except (OSError, ssl.SSLError) as err:
        raise HubError(f"cannot load the TLS files of this context: {err}") from None
    except ConfigError as err:
        raise HubError(str(err).removeprefix("error: ")) from None
    return context


class HubClient:
    def __init__(self, server: str, session: aiohttp.ClientSession) -> None:
        self.server = server.rstrip("/")
        self.session = session

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, settings: ClientSettings, context: ssl.SSLContext | None = None) -> AsyncIterator[HubClient]:
        """A client for `settings`; `context` from `ssl_context(settings)` (built there if not given)."""
        context = context if context is not None else ssl_context(settings)
        headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
        connector = aiohttp.TCPConnector(ssl=context if context is not None else False)
        async with aiohttp.ClientSession(timeout=TIMEOUT, headers=headers, connector=connector) as session:
            yield cls(settings.server, session)

    async def request(
        self, method: str, path: str, body: Object | None = None, params: dict[str, str] | None = None
    ) -> tuple[int, Object]:
        """(HTTP status, JSON body) of a successful request; raises HubError otherwise. An answer
        that says when to try again (429 or 5xx with Retry-After: the hub while NATS elects a
        leader) is tried again after that long, up to MAX_RETRIES times, as client-go does."""
        try:
            for attempt in range(MAX_RETRIES + 1):
                async with self.session.request(
                    method, self.server + path, json=body, params=params, headers=_trace_headers()
                ) as resp:
                    text = await resp.text()
                    wait = _retry_after(resp)
                if wait is None or attempt == MAX_RETRIES:
                    break
                await asyncio.sleep(wait)
            data = _json(resp, text)
            if resp.status >= 400:
                if data.get("kind") == "Status":
                    raise HubError.from_status(resp.status, data)
                raise HubError(text.strip()[:300] or str(resp.reason), resp.status, str(resp.reason or ""))
            return resp.status, data
        except aiohttp.ClientConnectorCertificateError as err:
            why = getattr(err.certificate_error, "verify_message", None) or err.certificate_error
            raise HubError(
                f"cannot verify the hub's certificate at {self.server} ({why}); "
                "trust its CA with certificate-authority in the cnet config or --certificate-authority"
            ) from None
        except aiohttp.ClientSSLError as err:
            raise HubError(
                f"TLS with the hub at {self.server} failed: {getattr(err, 'strerror', None) or err}"
            ) from None
        except aiohttp.ClientError as err:
            raise HubError(f"cannot reach the hub at {self.server}: {err}") from None
        except TimeoutError:
            raise HubError(f"the hub at {self.server} did not answer in time") from None

    async def get(self, path: str) -> Object:
        return (await self.request("GET", path))[1]

    async def get_or_none(self, path: str) -> Object | None:
        """The object at `path`, None when there is none (404)."""
        try:
            return await self.get(path)
        except HubError as err:
            if err.code == 404:
                return None
            raise

    async def list_objects(self, info: KindInfo, namespace: str | None, selector: str = "") -> list[Object]:
        return list((await self.list_at(collection_path(info, namespace), selector)).get("items") or [])

    async def list_at(self, path: str, selector: str = "", field_selector: str = "") -> Object:
        """The List at `path` (its items and metadata.resourceVersion, where a watch starts: unlike an
        object's, a list's resourceVersion is a position in every bucket of the kind)."""
        params = {"labelSelector": selector} if selector else {}
        if field_selector:
            params["fieldSelector"] = field_selector
        return (await self.request("GET", path, params=params or None))[1]

    async def watch(
        self, path: str, resource_version: str, selector: str = "", field_selector: str = ""
    ) -> AsyncIterator[Object]:
        """The WatchEvents after `resource_version` (the hub's chunked stream), until it ends."""
        params = {"watch": "true", "resourceVersion": resource_version}
        if selector:
            params["labelSelector"] = selector
        if field_selector:
            params["fieldSelector"] = field_selector
        timeout = aiohttp.ClientTimeout(total=None, connect=10)
        try:
            url, headers = self.server + path, _trace_headers()
            async with self.session.get(url, params=params, timeout=timeout, headers=headers) as resp:
                if resp.status >= 400:
                    raise HubError.from_status(resp.status, _json(resp, await resp.text()))
                async for line in resp.content:
                    if line.strip():
                        event = json.loads(line)
                        if isinstance(event, dict):
                            yield event
        except aiohttp.ClientError as err:
            raise HubError(f"the watch on {self.server}{path} broke: {err}") from None

    async def events(self, kind: str, namespace: str | None, name: str) -> list[Object]:
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        data = (await self.request("GET", events_path(namespace), params={"fieldSelector": selector}))[1]
        return list(data.get("items") or [])


def _trace_headers() -> dict[str, str]:
    """The command's trace context (`traceparent`), so the hub's spans join its trace. OpenTelemetry's
    own propagator, not store.tracecontext: that module loads the whole store package (nats)."""
    headers: dict[str, str] = {}
    propagate.inject(headers)
    return headers


def _retry_after(resp: aiohttp.ClientResponse) -> float | None:
    """Seconds to wait before trying again, when the answer asks for it (429, or 5xx with
    Retry-After); None: the answer stands."""
    header = resp.headers.get("Retry-After")
    if header is None or not (resp.status == 429 or resp.status >= 500):
        return None
    try:
        return min(max(float(header), 0.0), MAX_RETRY_WAIT)
    except ValueError:
        return 1.0


def _json(resp: aiohttp.ClientResponse, text: str) -> Object:
    if resp.content_type != "application/json":
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}

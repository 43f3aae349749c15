"""The kube backend's one door to the API server: JSON in, JSON out, errors with their status.

kubernetes-asyncio's typed clients cover built-in kinds only, and the agent applies anything
(CRD instances included), so every call goes through its raw `call_api` with paths built from
discovery. Keeping that untyped library behind this class gives the rest of the backend plain
dicts and one exception type, and keeps connection setup (kubeconfig or in-cluster) in one place.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, cast

import aiohttp
import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException

Json = dict[str, Any]
APPLY_PATCH = "application/apply-patch+yaml"


class KubeError(Exception):
    """The API server refused a request; `status` is its HTTP code (0: it could not be reached)."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path}: {status} {message}")
        self.status = status
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: a resourceVersion no longer current, or a create of a name that exists."""
        return self.status == 409


def _message(body: Any) -> str:
    """The `message` of a Kubernetes Status body, else the body as text."""
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
    try:
        status = json.loads(text)
    except ValueError:
        return text
    return str(status.get("message", text)) if isinstance(status, dict) else text


class KubeApi:
    def __init__(self, client: ApiClient) -> None:
        self._client = client

    @property
    def server(self) -> str:
        return str(self._client.configuration.host)

    @property
    def client(self) -> ApiClient:
        """The underlying client, for a caller that streams raw HTTP (the proxy's ApiServer)."""
        return self._client

    async def close(self) -> None:
        await self._client.close()

    async def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Json:
        response = await self._call(method, path, query, body, content_type)
        data = await response.read()
        return cast(Json, json.loads(data)) if data else {}

    async def get(self, path: str) -> Json | None:
        """The object at `path`, or None when the server has none (404)."""
        try:
            return await self.request("GET", path)
        except KubeError as err:
            if err.not_found:
                return None
            raise

    async def status_code(self, path: str) -> int:
        """The HTTP status of a GET, for health endpoints (`/healthz`, `/livez`, `/readyz`)."""
        try:
            response = await self._call("GET", path, None, None, "application/json")
        except KubeError as err:
            return err.status
        await response.read()
        return int(response.status)

    async def stream(self, path: str, query: Mapping[str, str]) -> AsyncIterator[Json]:
        """The JSON lines of a watch, until the server ends it."""
        response = await self._call("GET", path, {**query, "watch": "true"}, None, "application/json")
        async with response:
            async for line in response.content:
                if line.strip():
                    yield cast(Json, json.loads(line))

    async def _call(self, method: str, path: str, query: Mapping[str, str] | None, body: Any, content_type: str) -> Any:
        try:
            response = await self._client.call_api(
                path,
                method,
                query_params=list((query or {}).items()),
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
            )
        except ApiException as err:
            raise KubeError(method, path, int(err.status or 0), _message(err.body)) from None
        except (TimeoutError, OSError, aiohttp.ClientError) as err:
            raise KubeError(method, path, 0, repr(err)) from None
        if not 200 <= response.status <= 299:
            async with response:
                raise KubeError(method, path, int(response.status), _message(await response.read()))
        return response


async def connect(kubeconfig: Path | None) -> KubeApi:
    """A client from a kubeconfig file, or, with none, from the pod's service account."""
    configuration = Configuration()
    if kubeconfig is None:
        await asyncio.to_thread(kube_config.load_incluster_config, client_configuration=configuration)
    else:
        text = await asyncio.to_thread(kubeconfig.read_text)
        await kube_config.load_kube_config_from_dict(yaml.safe_load(text), client_configuration=configuration)
    return KubeApi(ApiClient(configuration))

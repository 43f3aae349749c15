"""Small request helpers for the verb tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from tests.hub.objects import subs_path, subscription

__all__ = ["create", "events", "subs_path", "subscription"]


async def create(http: aiohttp.ClientSession, namespace: str, name: str = "demo", **spec: Any) -> dict[str, Any]:
    async with http.post(subs_path(namespace), json=subscription(namespace, name, **spec)) as resp:
        assert resp.status == 201, await resp.text()
        body: dict[str, Any] = await resp.json()
        return body


async def events(resp: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    """The WatchEvents of a watch response, one JSON document per line."""
    async for line in resp.content:
        if line.strip():
            yield json.loads(line)

"""The hub served from the caller's event loop, for tests of the hub and of clients like `cnet`.

It runs the real service (the same `build`, ServiceContext and lifecycle as the process) on a
free port, and yields the URL once it listens, so tests never guess ports or sleep.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from clusternet_nats.hub.service import HubServer, build
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.waiting import eventually


@contextlib.asynccontextmanager
async def running_hub(nats_url: str) -> AsyncIterator[str]:
    servers: list[HubServer] = []

    async def build_on_free_port(ctx: ServiceContext) -> None:
        servers.append(await build(ctx, "127.0.0.1:0"))

    def url() -> str:
        return (servers[0].url or "") if servers else ""

    async with running_service("clusternet-hub", build_on_free_port, nats_url):
        yield await eventually(url, timeout=30, what="hub listening")

"""Run a service's builder in this event loop against a real NATS, for integration tests.

End-to-end tests start services as processes (testing.system); this is for testing one
service's reconcilers quickly, with the same ServiceContext they get in production.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from clusternet_nats.runtime.service import Builder, CommonOptions, serve


@contextlib.asynccontextmanager
async def running_service(name: str, build: Builder, nats_url: str, stream_replicas: int = 1) -> AsyncIterator[None]:
    stop = asyncio.Event()
    options = CommonOptions(nats_url=nats_url, health_port=-1, stream_replicas=stream_replicas)
    task = asyncio.create_task(serve(name, options, build, stop))
    try:
        yield
    finally:
        stop.set()
        async with asyncio.timeout(45):  # serve bounds each of its three shutdown steps to 10 s
            await task

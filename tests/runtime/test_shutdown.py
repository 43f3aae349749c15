"""A service stops on SIGTERM even when one of its components hangs on stop."""

from __future__ import annotations

import asyncio
import contextlib

from clusternet_nats.runtime.service import CommonOptions, ServiceContext, serve
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually


async def test_a_component_that_ignores_its_cancellation_does_not_hold_the_service(nats_server: NatsServer) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def stubborn() -> None:
        started.set()
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await release.wait()

    async def build(ctx: ServiceContext) -> None:
        ctx.run_forever(stubborn)

    stop = asyncio.Event()
    options = CommonOptions(nats_url=nats_server.url, health_port=-1)
    service = asyncio.create_task(serve("stubborn", options, build, stop, stop_timeout=0.5))
    try:
        await eventually(started.is_set, what="the stubborn component running")
        stop.set()
        await asyncio.wait_for(service, 20)  # returns although the component never ends
        assert not release.is_set()
    finally:
        release.set()  # the abandoned component ends at its next turn

"""The hub as a service: an HTTP server riding the common service lifecycle.

It listens as soon as it is built, before the service reports ready, so whoever waits on
`/readyz` (the system harness, a Kubernetes probe) never races the listener. Its cleanup is a
`run_forever` job: the ServiceContext cancels it on SIGTERM, which closes the listener and
lets in-flight requests finish before the NATS connection is drained.
"""

from __future__ import annotations

import asyncio

import structlog
from aiohttp import web
from clusternet_nats.hub.app import make_app
from clusternet_nats.hub.clusterhealth import ClusterHealth
from clusternet_nats.runtime.service import ServiceContext

DEFAULT_LISTEN = "127.0.0.1:8080"

log = structlog.get_logger(__name__)


def parse_listen(listen: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:8080` for IPv6) to (host, port); raises ValueError."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT, not {listen!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


class HubServer:
    def __init__(self, ctx: ServiceContext, listen: str) -> None:
        self.ctx = ctx
        self.host, self.port = parse_listen(listen)
        self.url: str | None = None
        """The base URL once listening (the real port when asked for port 0)."""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = make_app(self.ctx.nc, self.ctx.metrics, self.ctx.is_ready)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        log.info("hub.listening", url=self.url)

    async def serve_until_cancelled(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            self.url = None
            if self._runner is not None:
                await self._runner.cleanup()


async def build(ctx: ServiceContext, listen: str = DEFAULT_LISTEN) -> HubServer:
    server = HubServer(ctx, listen)
    ClusterHealth(ctx)
    await server.start()
    ctx.run_forever(server.serve_until_cancelled)
    return server

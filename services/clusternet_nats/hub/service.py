"""The hub as a service: an HTTPS server riding the common service lifecycle.

It listens as soon as it is built, before the service reports ready, so whoever waits on
`/readyz` (the system harness, a Kubernetes probe) never races the listener. Its cleanup is a
`run_forever` job: the ServiceContext cancels it on SIGTERM, which closes the listener and
lets in-flight requests finish before the NATS connection is drained.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import structlog
from aiohttp import web
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.hub.app import make_app
from clusternet_nats.hub.auth.options import Security, SecurityOptions
from clusternet_nats.hub.clusterhealth import ClusterHealth
from clusternet_nats.hub.clusterinit import ClusterInitController
from clusternet_nats.hub.feedinventory import FeedInventoryController
from clusternet_nats.hub.helmcharts import HelmChartController
from clusternet_nats.hub.resources import Overlay
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.runtime.tlsbuffers import limit_tls_read_buffer

DEFAULT_LISTEN = "127.0.0.1:8080"

log = structlog.get_logger(__name__)


def parse_listen(listen: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:8080` for IPv6) to (host, port); raises ValueError."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT, not {listen!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


class HubServer:
    def __init__(
        self, ctx: ServiceContext, listen: str, security: SecurityOptions, overlays: Mapping[str, Overlay] | None = None
    ) -> None:
        self.ctx = ctx
        self.overlays = overlays
        self.host, self.port = parse_listen(listen)
        self.security_options = security
        self.security: Security | None = None
        """Loaded at start: the TLS context, the gate and the generated CA (if any)."""
        self.url: str | None = None
        """The base URL once listening (the real port when asked for port 0)."""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self.security = security = await Security.load(self.security_options, self.host)
        app = make_app(self.ctx.nc, self.ctx.is_ready, security.gate, self.ctx.objects(ManagedCluster), self.overlays)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        limit_tls_read_buffer()  # a connection per watch: 256 KiB each by default
        await web.TCPSite(self._runner, self.host, self.port, ssl_context=security.ssl_context).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        log.info("hub.listening", url=self.url, ca=str(security.ca_file) if security.ca_file else None)

    @property
    def app(self) -> web.Application:
        """The application being served (its router lists every route), once started."""
        if self._runner is None:
            raise RuntimeError("the hub server has not been started")
        return self._runner.app

    async def serve_until_cancelled(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            self.url = None
            if self._runner is not None:
                await self._runner.cleanup()
            if self.security is not None:
                await self.security.close()


async def build(
    ctx: ServiceContext,
    listen: str = DEFAULT_LISTEN,
    security: SecurityOptions | None = None,
    cluster_init: bool = False,
) -> HubServer:
    """`security`: TLS and access settings; the defaults generate a CA in the default cert dir and
    let only `system:masters` in (with no authenticator configured, nobody). `cluster_init`: the
    ClusterInit feature gate."""
    health = ClusterHealth(ctx)
    server = HubServer(ctx, listen, security or SecurityOptions(), {ManagedCluster.KIND: health.show_observed})
    ClusterInitController(ctx, cluster_init)
    FeedInventoryController(ctx)
    HelmChartController(ctx)
    await server.start()
    ctx.run_forever(server.serve_until_cancelled)
    return server

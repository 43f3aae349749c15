"""`/healthz`, `/livez`, `/readyz` and `/metrics`: one implementation for every service and the hub.

Liveness (`/healthz`, and `/livez` as Kubernetes names it) says the process still serves: it stays
200 while NATS is away, because the client reconnects by itself and a restart would only add an
outage of its own (fleet-wide, a restart storm). Readiness (`/readyz`) says the service can do its
work: ready by its own measure and connected to NATS, so traffic and rollouts wait for it.
`/metrics` is prometheus-client's exposition of the process's registry (runtime/metrics.py: the
names, process metrics, histograms), in the text format or OpenMetrics as the scraper asks. The
hub adds these routes to its API port; every other service serves them on a port of their own
(`--health-port`). Probes are frequent: the hub's access log writes them at debug level only.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from nats.aio.client import Client as NATS
from prometheus_client import REGISTRY
from prometheus_client.aiohttp import make_aiohttp_handler

PROBE_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/metrics"})


def add_health_routes(app: web.Application, nc: NATS, ready: Callable[[], bool]) -> None:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if not nc.is_connected:
            return web.Response(status=503, text="nats disconnected")
        ok = ready()
        return web.Response(status=200 if ok else 503, text="ok" if ok else "not ready")

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", make_aiohttp_handler(REGISTRY))


async def serve_health(host: str, port: int, nc: NATS, ready: Callable[[], bool]) -> web.AppRunner:
    """The health routes alone on `host:port`; the caller cleans the runner up."""
    app = web.Application()
    add_health_routes(app, nc, ready)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner

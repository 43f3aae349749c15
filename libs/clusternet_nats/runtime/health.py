"""`/healthz`, `/livez`, `/readyz` and `/metrics`: one implementation for every service and the hub.

Liveness (`/healthz`, and `/livez` as Kubernetes names it) says the process still serves: it stays
200 while NATS is away, because the client reconnects by itself and a restart would only add an
outage of its own (fleet-wide, a restart storm). Readiness (`/readyz`) says the service can do its
work: ready by its own measure and connected to NATS, so traffic and rollouts wait for it.
`/metrics` carries, beside each service's own figures, the stored records it met that could not
be decoded (`cnet_undecodable_records_total{bucket}`). The hub adds these routes to its API port;
every other service serves them on a port of their own (`--health-port`).
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from clusternet_nats.runtime.metrics import Metrics
from clusternet_nats.store.kv import UNDECODABLE
from nats.aio.client import Client as NATS


def add_health_routes(app: web.Application, nc: NATS, ready: Callable[[], bool], metrics: Metrics) -> None:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if not nc.is_connected:
            return web.Response(status=503, text="nats disconnected")
        ok = ready()
        return web.Response(status=200 if ok else 503, text="ok" if ok else "not ready")

    async def metrics_text(_: web.Request) -> web.Response:
        metrics.set("nats_connected", 1 if nc.is_connected else 0)
        for bucket, count in UNDECODABLE.items():
            metrics.set(f'undecodable_records_total{{bucket="{bucket}"}}', count)
        return web.Response(text=metrics.render(), content_type="text/plain")

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_text)


async def serve_health(
    host: str, port: int, nc: NATS, ready: Callable[[], bool], metrics: Metrics
) -> web.AppRunner:
    """The health routes alone on `host:port`; the caller cleans the runner up."""
    app = web.Application()
    add_health_routes(app, nc, ready, metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner

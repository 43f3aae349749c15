"""The hub's aiohttp application: API routes, and the shared health and metrics routes, on one port.

One middleware owns failure handling and request metrics, so handlers only raise ApiError and
every error, including a crash, an unknown path or a refusal, reaches the client as a Kubernetes
Status; the gate's middleware inside it authenticates and authorizes every request. The same
middleware runs each request in a SERVER span (the child of the caller's `traceparent`, if it sent
one), whose context the writes the request makes carry on to every service, and writes the access
log: one line per request with method, path, status, duration and user, at debug level for the
probes and /metrics (scraped every few seconds), at info for the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import nats.errors
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.hub.auth.gate import GATE, Gate, user_of
from clusternet_nats.hub.discovery import Discovery
from clusternet_nats.hub.errors import ApiError, undecodable
from clusternet_nats.hub.events import Events
from clusternet_nats.hub.predictor_routes import PredictorRoutes
from clusternet_nats.hub.proxy import ProxyRoutes
from clusternet_nats.hub.registration.http import ApprovalRoutes, TokenRoutes
from clusternet_nats.hub.resources import Overlay, Resources
from clusternet_nats.hub.shadow import Shadow
from clusternet_nats.hub.tables import tables
from clusternet_nats.hub.writes import Writer
from clusternet_nats.runtime.health import PROBE_PATHS, add_health_routes
from clusternet_nats.runtime.metrics import HTTP_DURATION, HTTP_REQUESTS
from clusternet_nats.store import Informer
from clusternet_nats.store.buckets import MAX_VALUE_BYTES
from clusternet_nats.store.errors import UndecodableError
from clusternet_nats.store.tracecontext import extract, span
from clusternet_nats.store.views import ObjectViews
from nats.aio.client import Client as NATS
from opentelemetry.trace import SpanKind

log = structlog.get_logger(__name__)


def _user(request: web.Request) -> str | None:
    try:
        return user_of(request).name
    except RuntimeError:  # refused before or by authentication
        return None


def _route(request: web.Request) -> str | None:
    """The matched route's template (`/apis/{group}/...`), so span names stay few; None when none matched."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else None


@web.middleware
async def _observed(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    route = _route(request)
    attributes = {"http.request.method": request.method, "url.path": request.path, "http.route": route}
    name = f"{request.method} {route}" if route else request.method
    with span(name, kind=SpanKind.SERVER, parent=extract(request.headers), attributes=attributes) as current:
        response = await _answer(request, handler)
        current.set_attribute("http.response.status_code", response.status)
        user = _user(request)
        if user is not None:
            current.set_attribute("enduser.id", user)
        elapsed = time.perf_counter() - started
        HTTP_REQUESTS.labels(request.method, str(response.status)).inc()
        if isinstance(response, web.Response):  # a stream (a watch) lasts as long as its client wants
            HTTP_DURATION.labels(request.method).observe(elapsed)
        access = log.debug if request.path in PROBE_PATHS else log.info
        access(  # in the span: the line carries its trace_id
            "http.request",
            method=request.method,
            path=request.path,
            query=request.query_string or None,
            status=response.status,
            duration_ms=round(elapsed * 1000, 3),
            user=user,
            remote=request.remote,
        )
    return response


async def _answer(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The handler's response, or the Status that says why there is none."""
    try:
        response = await handler(request)
    except ApiError as err:
        response = err.response()
    except UndecodableError as err:
        response = undecodable(err).response()
    except web.HTTPException as exc:  # unknown path or method: aiohttp's own answer, as a Status
        response = ApiError(exc.status, exc.reason.replace(" ", ""), exc.text or exc.reason).response()
    except nats.errors.Error as err:  # NATS unreachable or slow: worth a retry, unlike a 500
        log.warning("request.store_unavailable", method=request.method, path=request.path, error=repr(err))
        message = f"the store is unavailable: {err!r}"
        response = ApiError(503, "ServiceUnavailable", message, {"retryAfterSeconds": 1}).response()
    except Exception:
        log.exception("request.failed", method=request.method, path=request.path)
        response = ApiError(500, "InternalError", "internal error; see the hub's log").response()
    return response


def make_app(
    nc: NATS,
    ready: Callable[[], bool],
    gate: Gate,
    clusters: Informer[ManagedCluster],
    overlays: Mapping[str, Overlay] | None = None,
) -> web.Application:
    """Every route sits behind `gate` (authentication, then authorization), inside the error
    middleware so that refusals too are Status objects and counted. `clusters`: the hub's one
    informer of ManagedClusters, which the proxy finds clusters in; `overlays`: what reads show
    beyond the store, by kind."""
    js = nc.jetstream()
    app = web.Application(
        middlewares=[_observed, gate.middleware(), tables],
        client_max_size=MAX_VALUE_BYTES,
    )
    app[GATE] = gate

    add_health_routes(app, nc, ready)
    Events(js).add_routes(app)
    PredictorRoutes(nc).add_routes(app)
    # Before the generic /apis/<group>/<version>/<plural> routes:
    TokenRoutes(js).add_routes(app)
    ApprovalRoutes(js).add_routes(app)
    views = ObjectViews(js)
    Discovery(views).add_routes(app)
    ProxyRoutes(nc, views, clusters).add_routes(app)
    Shadow(Writer(views)).add_routes(app)
    Resources(views, overlays).add_routes(app)
    return app

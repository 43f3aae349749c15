"""The hub's aiohttp application: API routes, and the shared health and metrics routes, on one port.

One middleware owns failure handling and request metrics, so handlers only raise ApiError and
every error, including a crash, an unknown path or a refusal, reaches the client as a Kubernetes
Status; the gate's middleware inside it authenticates and authorizes every request.
"""

from __future__ import annotations

from collections.abc import Callable

import nats.errors
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from clusternet_nats.hub.auth.gate import GATE, Gate
from clusternet_nats.hub.discovery import Discovery
from clusternet_nats.hub.errors import ApiError, undecodable
from clusternet_nats.hub.events import Events
from clusternet_nats.hub.predictor_routes import PredictorRoutes
from clusternet_nats.hub.registration.http import ApprovalRoutes, TokenRoutes
from clusternet_nats.hub.resources import Resources
from clusternet_nats.hub.shadow import Shadow
from clusternet_nats.hub.tables import tables
from clusternet_nats.hub.writes import Writer
from clusternet_nats.runtime.health import add_health_routes
from clusternet_nats.runtime.metrics import Metrics
from clusternet_nats.store.buckets import MAX_VALUE_BYTES
from clusternet_nats.store.errors import UndecodableError
from clusternet_nats.store.views import ObjectViews
from nats.aio.client import Client as NATS

log = structlog.get_logger(__name__)


def _errors_and_metrics(metrics: Metrics) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
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
            response = ApiError(503, "ServiceUnavailable", f"the store is unavailable: {err!r}").response()
        except Exception:
            log.exception("request.failed", method=request.method, path=request.path)
            response = ApiError(500, "InternalError", "internal error; see the hub's log").response()
        metrics.inc(f'http_requests_total{{method="{request.method}",code="{response.status}"}}')
        return response

    return middleware


def make_app(nc: NATS, metrics: Metrics, ready: Callable[[], bool], gate: Gate) -> web.Application:
    """Every route sits behind `gate` (authentication, then authorization), inside the error
    middleware so that refusals too are Status objects and counted."""
    js = nc.jetstream()
    app = web.Application(
        middlewares=[_errors_and_metrics(metrics), gate.middleware(), tables],
        client_max_size=MAX_VALUE_BYTES,
    )
    app[GATE] = gate

    add_health_routes(app, nc, ready, metrics)
    Events(js).add_routes(app)
    PredictorRoutes(nc).add_routes(app)
    # Before the generic /apis/<group>/<version>/<plural> routes:
    TokenRoutes(js).add_routes(app)
    ApprovalRoutes(js).add_routes(app)
    views = ObjectViews(js)
    Discovery(views).add_routes(app)
    Shadow(Writer(views)).add_routes(app)
    Resources(views).add_routes(app)
    return app

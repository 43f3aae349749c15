"""Clusternet's HTTP predictor API on the hub's port, answered by the predictor over NATS.

Clusternet serves it from a predictor in each child cluster (pkg/predictor/server.go); ours is
one service behind the hub, so the header `Cluster-ID` (Clusternet's cluster id, or our
`namespace/name`) says which cluster:

* `POST /replicas/predict`, body a ReplicaRequirements: `PredictorResults`,
  `{"replicas": {"default": N}}`, the replicas of that shape the cluster can still take.
  No feasible node is a 500 with Clusternet's message, as its server answers.
* `GET /replicas/unscheduled`: with `Cluster-ID`, the replicas bound to that cluster and not
  running yet; without, those no cluster had room for (Clusternet answers "Not Implemented").

Every route sits behind the hub's gate like the others: a non-resource path, so the policy
authorizer allows it to admins, a delegated one asks the Kubernetes RBAC of `nonResourceURLs`.
"""

from __future__ import annotations

import nats.errors
from aiohttp import web
from clusternet_nats.api.apps import ReplicaRequirements
from clusternet_nats.api.loader import field_path
from clusternet_nats.api.meta import Model
from clusternet_nats.api.predictor import (
    CLUSTER_ID_HEADER,
    DEFAULT_ACCEPTABLE_REPLICAS_KEY,
    ROOT_PATH_REPLICAS,
    SUB_PATH_PREDICT,
    SUB_PATH_UNSCHEDULED,
    PredictionFailure,
    PredictorResults,
    PredictReply,
    PredictRequest,
    UnscheduledReply,
    UnscheduledRequest,
)
from clusternet_nats.api.subjects import PREDICT, UNSCHEDULED
from clusternet_nats.api.yamljson import DecodeError, load_json
from clusternet_nats.hub.errors import ApiError
from clusternet_nats.store.tracecontext import request_span
from nats.aio.client import Client as NATS
from pydantic import ValidationError

TIMEOUT = 5.0
PREDICT_PATH = ROOT_PATH_REPLICAS + SUB_PATH_PREDICT
UNSCHEDULED_PATH = ROOT_PATH_REPLICAS + SUB_PATH_UNSCHEDULED


class PredictorRoutes:
    def __init__(self, nc: NATS) -> None:
        self.nc = nc

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(PREDICT_PATH, self.predict)
        app.router.add_get(UNSCHEDULED_PATH, self.unscheduled)

    async def _ask(self, subject: str, request: Model) -> bytes:
        try:
            with request_span("predictor.request", subject) as headers:
                msg = await self.nc.request(subject, request.to_json(), timeout=TIMEOUT, headers=headers or None)
        except nats.errors.NoRespondersError:
            raise ApiError(503, "ServiceUnavailable", "no predictor is running (clusternet-predictor)") from None
        except nats.errors.TimeoutError:
            raise ApiError(504, "Timeout", f"the predictor did not answer within {TIMEOUT:g}s") from None
        return bytes(msg.data)

    async def predict(self, request: web.Request) -> web.Response:
        cluster = request.headers.get(CLUSTER_ID_HEADER)
        if not cluster:
            raise ApiError(400, "BadRequest", f"header {CLUSTER_ID_HEADER} is required: the cluster to predict for")
        try:
            requirements = ReplicaRequirements.model_validate(load_json(await request.read() or b"{}"))
        except DecodeError as err:
            raise ApiError(400, "BadRequest", f"ReplicaRequirements: {err}") from None
        except ValidationError as err:
            causes = [{"field": field_path(e["loc"]), "message": e["msg"]} for e in err.errors()]
            message = "; ".join(f"{c['field']}: {c['message']}" for c in causes)
            raise ApiError(422, "Invalid", f"ReplicaRequirements is invalid: {message}", {"causes": causes}) from None
        answer = PredictReply.model_validate_json(
            await self._ask(PREDICT.format(), PredictRequest(clusters=[cluster], feeds=[requirements]))
        )
        if answer.error:
            raise ApiError(422, "Invalid", answer.error)
        prediction = answer.clusters.get(cluster)
        if prediction is None or prediction.replicas is None:
            reason = prediction.reason if prediction else None
            message = prediction.error if prediction and prediction.error else f"cluster {cluster} was not predicted"
            if reason is PredictionFailure.NOT_FOUND:
                raise ApiError(404, "NotFound", message)
            raise ApiError(500, "InternalError", message)
        replicas = prediction.replicas[0] or 0
        return web.json_response(PredictorResults(replicas={DEFAULT_ACCEPTABLE_REPLICAS_KEY: replicas}).to_json_dict())

    async def unscheduled(self, request: web.Request) -> web.Response:
        ask = UnscheduledRequest(cluster=request.headers.get(CLUSTER_ID_HEADER) or None)
        answer = UnscheduledReply.model_validate_json(await self._ask(UNSCHEDULED.format(), ask))
        if answer.error:
            raise ApiError(404, "NotFound", answer.error)
        return web.json_response(answer.to_json_dict())

"""The predictor service: a queue-grouped NATS responder over a cache of cluster statuses.

It subscribes only once the status informer has listed, so no request is answered "unknown
cluster" merely because the cache was still filling; the queue group lets any number of
replicas share the requests. Requests are answered one at a time (the answer is a lookup and
some arithmetic) by the shared responder (runtime/responder.py).
"""

from __future__ import annotations

import structlog
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.quantity import QuantityError
from clusternet_nats.api.registry import by_kind
from clusternet_nats.predictor.fit import max_acceptable_replicas
from clusternet_nats.predictor.messages import (
    SUBSCRIPTION_SUBJECT,
    AccommodationReply,
    AccommodationRequest,
    parse_accommodation_subject,
)
from clusternet_nats.runtime.responder import Failure, Responder
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import object_key
from nats.aio.msg import Msg
from pydantic import ValidationError

QUEUE_GROUP = "clusternet-predictor"
log = structlog.get_logger(__name__)


class Predictor:
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        bucket = by_kind("ManagedCluster").status_bucket
        assert bucket is not None, "ManagedCluster has a status bucket"
        self.statuses = ctx.records(bucket, ManagedClusterStatus)

    def _reply(self, subject: str, data: bytes) -> AccommodationReply:
        cluster = parse_accommodation_subject(subject)
        if cluster is None:
            return AccommodationReply(error=f"unknown predictor subject {subject!r}")
        namespace, name = cluster
        status = self.statuses.get(object_key(namespace, name))
        if status is None:
            return AccommodationReply(error=f"managedcluster {namespace}/{name} not found: it has reported no status")
        try:
            request = AccommodationRequest.model_validate_json(data)
            resources = request.requirements.resources
            requests = (resources.requests if resources else None) or {}
            fits = max_acceptable_replicas(status.allocatable or {}, requests)
        except (ValidationError, QuantityError) as err:
            return AccommodationReply(error=f"invalid accommodation request for {namespace}/{name}: {err}")
        return AccommodationReply(max_acceptable_replicas=fits)

    def accept(self, msg: Msg) -> Msg:
        """Any hub-side caller may ask (only hub-side identities may publish here)."""
        return msg

    async def answer(self, msg: Msg) -> bytes:
        reply = self._reply(msg.subject, msg.data)
        result = "error" if reply.error else "ok"
        self.ctx.metrics.inc(f'predictor_requests_total{{result="{result}"}}')
        log.debug("predictor.answered", subject=msg.subject, result=result, error=reply.error)
        return reply.to_json()

    def failed(self, msg: Msg, failure: Failure) -> bytes:
        self.ctx.metrics.inc('predictor_requests_total{result="failed"}')
        return AccommodationReply(error=failure.reason).to_json()


async def build(ctx: ServiceContext) -> None:
    responder = Responder(
        ctx.nc, SUBSCRIPTION_SUBJECT, Predictor(ctx), name="the predictor", queue=QUEUE_GROUP, trusted=True
    )
    ctx.run_forever(responder.serve)

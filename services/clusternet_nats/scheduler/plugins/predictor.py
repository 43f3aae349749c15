"""Predictor, as Clusternet's Predict plugin: how many replicas of each feed a cluster can still take.

Clusternet's plugin asks each cluster's own predictor over HTTP, one request per cluster and
feed. Ours asks the predictor service (services/clusternet_nats/predictor) once per Subscription
over NATS request/reply (api/subjects.py PREDICT), for every feasible cluster and every feed,
and the service answers from the node inventories agents report. A feed without desired
replicas gets None, as Clusternet's; so does a feed with replicas but no requirements (a kind
with no pod template: no limit known). A cluster the predictor could not judge (no inventory
yet, no node its nodeSelector matches: Clusternet's "no feasible nodes found") is left out of
the answer, which the framework reports as not predicted; Clusternet fails the whole cycle.
No predictor answering is an error that names the subject, so the Subscription is retried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import nats.errors
import structlog
from clusternet_nats.api.apps import FeedInventory, ReplicaRequirements, Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.predictor import PredictReply, PredictRequest
from clusternet_nats.api.subjects import PREDICT
from clusternet_nats.scheduler.framework.interfaces import FeedReplicas, Plugin
from clusternet_nats.scheduler.framework.registry import PluginContext
from clusternet_nats.store.tracecontext import request_span
from nats.aio.client import Client as NATS
from pydantic import ValidationError

NAME = "Predictor"
DEFAULT_TIMEOUT = 5.0
"""Seconds to wait for the predictor (Clusternet's plugin waits 5 s per HTTP request)."""

log = structlog.get_logger(__name__)


class PredictorError(RuntimeError):
    """No predictor answered, or its answer could not be used; the message says which."""


class PredictorPlugin:
    name = NAME

    def __init__(self, nc: NATS, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.nc, self.timeout = nc, timeout

    async def predict(
        self, sub: Subscription, finv: FeedInventory, clusters: Sequence[ManagedCluster]
    ) -> dict[str, FeedReplicas]:
        if not clusters:
            return {}
        feeds: list[ReplicaRequirements | None] = [
            order.replica_requirements if order.desired_replicas is not None else None for order in finv.spec.feeds
        ]
        request = PredictRequest(clusters=[c.namespaced_name() for c in clusters], feeds=feeds)
        subject = PREDICT.format()
        try:
            with request_span("predictor.request", subject) as headers:
                msg = await self.nc.request(subject, request.to_json(), timeout=self.timeout, headers=headers or None)
        except nats.errors.NoRespondersError:
            raise PredictorError(f"no predictor answers on {subject}: is clusternet-predictor running?") from None
        except nats.errors.TimeoutError:
            raise PredictorError(f"the predictor did not answer on {subject} within {self.timeout:g}s") from None
        try:
            reply = PredictReply.model_validate_json(msg.data)
        except ValidationError as err:
            raise PredictorError(f"the predictor's answer on {subject} is malformed: {err}") from None
        if reply.error:
            raise PredictorError(f"the predictor refused subscription {sub.namespaced_name()}: {reply.error}")
        answer = {c: list(p.replicas) for c, p in reply.clusters.items() if p.replicas is not None}
        failed = {c: p.error for c, p in reply.clusters.items() if p.replicas is None}
        if failed:  # one line per Subscription, however many clusters: a fleet without inventories is loud enough
            sample = dict(sorted(failed.items())[:3])
            log.info("predictor.not_predicted", subscription=sub.namespaced_name(), clusters=len(failed), sample=sample)
        return answer


def predictor_factory(args: Mapping[str, Any], context: PluginContext) -> Plugin:
    """`pluginConfig` args: `timeout` (seconds, default 5)."""
    unknown = sorted(set(args) - {"timeout"})
    if unknown:
        raise ValueError(f"unknown args {', '.join(unknown)} (known: timeout)")
    timeout = args.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    if context.service is None:
        raise ValueError("needs the scheduler's NATS connection (a PluginContext with its service)")
    return PredictorPlugin(context.service.nc, float(timeout))

"""Making a JetStream consumer anew under a fixed name, in one API request when the name is free.

A consumer that must start over (the hub's feed of a cluster's Descriptions, `follow`ed again from
another sequence) was deleted, then created: two requests, though nearly every call (a fleet's
first follows, or any after a NATS restart, its in-memory consumers gone) finds no consumer to
delete. The server's `create` action creates only: a taken name is refused with
JSConsumerAlreadyExistsErr (the stored configuration has the server's defaults filled in, so it
differs from the one asked), and only then is the old consumer deleted. A request equal to the
stored configuration would be handed the old consumer, delivery state and all, so each request
carries a description of its own (`fresh`). nats-py's `add_consumer` sends no action (its default
creates or updates), hence the request here.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from clusternet_nats.store.domain import api_prefix
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, ConsumerInfo
from nats.js.errors import APIError, NotFoundError, ServiceUnavailableError
from nats.nuid import NUID

CONSUMER_EXISTS = 10148
"""JSConsumerAlreadyExistsErr: the `create` action met a consumer of that name, configured otherwise."""
API_TIMEOUT = 5.0
"""Seconds to wait for the server's answer (nats-py's default for its JetStream API calls)."""
_nuid = NUID()


def fresh(config: ConsumerConfig, purpose: str) -> ConsumerConfig:
    """`config` with a description no earlier configuration has."""
    return config.evolve(description=f"{purpose} ({_nuid.next().decode()})")


async def create_anew(nc: NATS, js: JetStreamContext, stream: str, config: ConsumerConfig) -> ConsumerInfo:
    """The consumer `config.name` of `stream` as `config` makes it, replacing any of that name."""
    info = await _create(nc, js, stream, config)
    if info is None:
        with contextlib.suppress(NotFoundError):
            await js.delete_consumer(stream, config.name or "")
        info = await js.add_consumer(stream, config)
    return info


async def _create(nc: NATS, js: JetStreamContext, stream: str, config: ConsumerConfig) -> ConsumerInfo | None:
    """Created, or None when a consumer of that name exists."""
    subject = f"{api_prefix(js)}.CONSUMER.CREATE.{stream}.{config.name}"
    if config.filter_subject and config.filter_subject != ">":
        subject += f".{config.filter_subject}"
    body = {"stream_name": stream, "config": config.as_dict(), "action": "create"}
    try:
        msg = await nc.request(subject, json.dumps(body).encode(), timeout=API_TIMEOUT)
    except NoRespondersError:
        raise ServiceUnavailableError from None
    answer: dict[str, Any] = json.loads(msg.data)
    error = answer.get("error")
    if error is not None:
        if error.get("err_code") == CONSUMER_EXISTS:
            return None
        APIError.from_error(error)  # raises the error's own type (NotFoundError for a missing stream)
    info: ConsumerInfo = ConsumerInfo.from_response(answer)
    return info

"""A registered cluster's access to the store: requests to the hub's intake, never JetStream.

Why is in api/intake.py. Here the same contract as JsonBucket's, so the agent's stores behave
alike in either mode: `get` returns (value, revision) or None, revision 0 creates, a stale
revision raises ConflictError, and a refusal raises IntakeRefusedError with the hub's reason.
"""

from __future__ import annotations

from clusternet_nats.api.intake import (
    BUCKET_HEADER,
    DELETE,
    EVENT,
    FOLLOW,
    GET,
    KEY_HEADER,
    PUT,
    REVISION_HEADER,
    FollowRequest,
    IntakeReply,
)
from clusternet_nats.api.registration import descriptions_deliver_subject, intake_subject
from clusternet_nats.store.errors import AlreadyExistsError, ConflictError, IntakeRefusedError, NotFoundError
from clusternet_nats.store.tracecontext import request_span
from nats.aio.client import Client as NATS

DEFAULT_TIMEOUT = 10.0


class IntakeClient:
    def __init__(self, nc: NATS, cluster_id: str, namespace: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.nc, self.cluster_id, self.namespace, self.timeout = nc, cluster_id, namespace, timeout

    @property
    def deliver_subject(self) -> str:
        """Where the hub's consumer delivers this cluster's Descriptions."""
        return descriptions_deliver_subject(self.cluster_id)

    async def get(self, bucket: str, key: str) -> tuple[bytes, int] | None:
        reply = await self._ask(GET, b"", {BUCKET_HEADER: bucket, KEY_HEADER: key})
        if reply.code == 404:
            return None
        if reply.code is not None:
            raise _refusal(bucket, key, reply, creating=False)
        return (reply.value or "").encode(), int(reply.revision or 0)

    async def follow(self, start_sequence: int) -> int:
        """(Re)starts the consumer delivering this cluster's Descriptions after `start_sequence`
        (0: the latest of each key) to `descriptions_deliver_subject`; how many are pending.
        Raises IntakeRefusedError with code 410 when the stream is behind `start_sequence` (it was
        reset: list again from 0)."""
        body = FollowRequest(start_sequence=start_sequence).model_dump_json(by_alias=True).encode()
        reply = await self._ask(FOLLOW, body, {})
        if reply.code is not None:
            raise IntakeRefusedError("descriptions", "", reply.code, reply.error or "")
        return int(reply.pending or 0)

    async def put(self, bucket: str, key: str, data: bytes, revision: int) -> int:
        headers = {BUCKET_HEADER: bucket, KEY_HEADER: key, REVISION_HEADER: str(revision)}
        reply = await self._ask(PUT, data, headers)
        if reply.code is not None:
            raise _refusal(bucket, key, reply, creating=revision == 0)
        return int(reply.revision or 0)

    async def delete(self, bucket: str, key: str, revision: int | None = None) -> None:
        headers = {BUCKET_HEADER: bucket, KEY_HEADER: key}
        if revision:
            headers[REVISION_HEADER] = str(revision)
        reply = await self._ask(DELETE, b"", headers)
        if reply.code is not None and reply.code != 404:
            raise _refusal(bucket, key, reply, creating=False)

    async def event(self, data: bytes) -> None:
        reply = await self._ask(EVENT, data, {})
        if reply.code is not None:
            raise IntakeRefusedError("events", "", reply.code, reply.error or "")

    async def _ask(self, verb: str, data: bytes, headers: dict[str, str]) -> IntakeReply:
        subject = intake_subject(self.namespace, verb)
        with request_span(f"intake.{verb}", subject) as traced:
            msg = await self.nc.request(subject, data, timeout=self.timeout, headers={**headers, **traced} or None)
        return IntakeReply.model_validate_json(msg.data)


def _refusal(bucket: str, key: str, reply: IntakeReply, creating: bool) -> Exception:
    if reply.code == 409:
        current = (reply.value.encode(), reply.revision) if reply.value is not None and reply.revision else None
        if creating:
            return AlreadyExistsError(bucket, key, current)
        return ConflictError(bucket, key, reply.error or "", current)
    if reply.code == 404:
        return NotFoundError(bucket, key)
    return IntakeRefusedError(bucket, key, reply.code or 500, reply.error or "")

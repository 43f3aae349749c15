"""A registered cluster's writes: requests to the hub's intake instead of publishes into streams.

Why the hub stores a cluster's records for it is in api/intake.py. Here the same compare-and-set
contract as JsonBucket's, so the agent's stores behave alike in either mode: revision 0 creates,
a stale revision raises ConflictError, and a refusal raises IntakeRefusedError with the hub's
reason. A cluster reads its own keys by direct get (its grants name its namespace), so only the
writes take this path.
"""

from __future__ import annotations

from clusternet_nats.api.intake import (
    BUCKET_HEADER,
    DELETE,
    EVENT,
    KEY_HEADER,
    PUT,
    REVISION_HEADER,
    IntakeReply,
)
from clusternet_nats.api.registration import intake_subject
from clusternet_nats.store.errors import AlreadyExistsError, ConflictError, IntakeRefusedError, NotFoundError
from nats.aio.client import Client as NATS

DEFAULT_TIMEOUT = 10.0


class IntakeClient:
    def __init__(self, nc: NATS, namespace: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.nc, self.namespace, self.timeout = nc, namespace, timeout

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
        msg = await self.nc.request(
            intake_subject(self.namespace, verb), data, timeout=self.timeout, headers=headers or None
        )
        return IntakeReply.model_validate_json(msg.data)


def _refusal(bucket: str, key: str, reply: IntakeReply, creating: bool) -> Exception:
    if reply.code == 409:
        return AlreadyExistsError(bucket, key) if creating else ConflictError(bucket, key, reply.error or "")
    if reply.code == 404:
        return NotFoundError(bucket, key)
    return IntakeRefusedError(bucket, key, reply.code or 500, reply.error or "")

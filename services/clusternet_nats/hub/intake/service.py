"""The intake's responder: a queue group, so every hub replica shares the clusters' requests.

Each request is handled in a task of its own, at most `concurrency` at once, and every request
gets an answer (runtime/responder.py): stored (with its revision), refused (with a code and a
reason that names only the asking cluster's own objects), 503 when the store is unreachable, or
500 naming only the error's type. The cluster behind a namespace is looked up in the
credentials the registrar keeps (an informer, so a lookup costs no round trip); a revoked or
unapproved cluster is refused, as is a message whose reply subject is not its own inbox.
"""

from __future__ import annotations

import structlog
from clusternet_nats.api.intake import (
    BUCKET_HEADER,
    DELETE,
    EVENT,
    FOLLOW,
    GET,
    KEY_HEADER,
    MAX_EVENT_BYTES,
    MAX_VALUE_BYTES,
    PUT,
    REVISION_HEADER,
    IntakeReply,
)
from clusternet_nats.api.labels import NODE_LABEL_PREFIX
from clusternet_nats.api.registration import inbox_prefix
from clusternet_nats.api.subjects import INTAKE, cluster_read_buckets, cluster_written_buckets
from clusternet_nats.hub.intake.admission import EventRule, Refused, Rule, rules
from clusternet_nats.hub.intake.feed import DescriptionsFeed
from clusternet_nats.hub.registration.penalties import Penalties
from clusternet_nats.hub.registration.records import CREDENTIALS_BUCKET, ClusterCredential
from clusternet_nats.runtime.ratelimit import RateLimiter
from clusternet_nats.runtime.responder import Failure, Responder, Unanswerable
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import AlreadyExistsError, ConflictError, Informer, JsonBucket
from clusternet_nats.store.events import event_subject
from clusternet_nats.store.kv import CONTENT_TYPE, JSON_CONTENT_TYPE
from nats.aio.msg import Msg

QUEUE = "clusternet-intake"
DEFAULT_RATE, DEFAULT_BURST = 100.0, 1000.0
"""Writes per second per cluster, and how many may come at once (a cluster's first deploy of
hundreds of Descriptions); past them the cluster is answered 429 and retries."""

log = structlog.get_logger(__name__)


class Intake:
    def __init__(
        self,
        ctx: ServiceContext,
        penalties: Penalties | None = None,
        rate: float = DEFAULT_RATE,
        burst: float = DEFAULT_BURST,
        concurrency: int = 256,
        label_prefixes: tuple[str, ...] = (NODE_LABEL_PREFIX,),
    ) -> None:
        self.ctx = ctx
        self.feed = DescriptionsFeed(ctx.nc, ctx.js)
        descriptions = JsonBucket(ctx.js, self.feed.bucket)
        self.rules: dict[str, Rule] = rules(ctx.js, descriptions, label_prefixes)
        written = cluster_written_buckets()
        if set(self.rules) != written:  # the registry and the rules must agree
            raise ValueError(f"intake rules for {sorted(self.rules)}; api/subjects.py: {sorted(written)}")
        self.stores = {
            bucket: descriptions if bucket == self.feed.bucket else JsonBucket(ctx.js, bucket)
            for bucket in cluster_read_buckets()
        }
        """What a cluster may read (its own keys): its Descriptions and what it writes."""
        self.events = EventRule(descriptions, MAX_EVENT_BYTES)
        self.limiter = RateLimiter(rate, burst)
        self.penalties = penalties
        self._persisting = RateLimiter(rate / 10, burst / 2)
        """Refusals a cluster may collect before it is banned: slowing down is expected, a flood
        that ignores 429s is not (each refused request still costs the hub)."""
        self.credentials: Informer[ClusterCredential] = ctx.records(CREDENTIALS_BUCKET, ClusterCredential)
        self._by_namespace: dict[str, tuple[str, ClusterCredential]] = {}
        """Namespace to (key, credential) of the cluster it is dedicated to."""
        self._namespace_of: dict[str, str] = {}
        """Credential key to its namespace: a deletion (the informer says only the key) finds its
        entry without a walk over every cluster's credential."""
        self.credentials.add_handler(self._index)
        subject = INTAKE.filter()
        self.responder = Responder(ctx.nc, subject, self, name="the hub's intake", queue=QUEUE, concurrency=concurrency)
        ctx.run_forever(self.responder.serve)

    def _index(self, key: str, credential: ClusterCredential | None) -> None:
        namespace = self._namespace_of.pop(key, None)
        if namespace is not None and self._by_namespace.get(namespace, ("",))[0] == key:
            del self._by_namespace[namespace]
        if credential is not None:
            self._namespace_of[key] = credential.namespace
            self._by_namespace[credential.namespace] = (key, credential)

    def accept(self, msg: Msg) -> tuple[ClusterCredential, str, Msg]:
        """(cluster, verb, msg) of a request the cluster owning the subject's namespace made."""
        _, _, namespace, verb = msg.subject.split(".", 3)
        _key, cluster = self._by_namespace.get(namespace, ("", None))
        if cluster is None or not msg.reply.startswith(inbox_prefix(cluster.cluster_id) + "."):
            # Not a request this cluster made (the server delivering someone else's messages
            # here), or no such cluster: there is no one to answer.
            raise Unanswerable(f"the reply is not the inbox of the cluster of namespace {namespace}")
        return cluster, verb, msg

    async def answer(self, request: tuple[ClusterCredential, str, Msg]) -> bytes:
        cluster, verb, msg = request
        try:
            reply = await self._handle(cluster, verb, msg)
        except Refused as err:
            log.info("intake.refused", cluster=cluster.name, verb=verb, code=err.code, reason=str(err))
            reply = IntakeReply(code=err.code, error=str(err))
        return reply.model_dump_json(exclude_none=True).encode()

    def failed(self, request: tuple[ClusterCredential, str, Msg], failure: Failure) -> bytes:
        """503 when the store was unreachable (the cluster retries), 500 for anything else."""
        reply = IntakeReply(code=503 if failure.retryable else 500, error=failure.reason)
        return reply.model_dump_json(exclude_none=True).encode()

    async def _handle(self, cluster: ClusterCredential, verb: str, msg: Msg) -> IntakeReply:
        if cluster.revoked or not cluster.approved:
            raise Refused(403, f"cluster {cluster.name} is not registered")
        if not self.limiter.allow(cluster.namespace):
            if not self._persisting.allow(cluster.namespace) and self.penalties is not None:
                self.penalties.punish(cluster.cluster_id, "intake flood")
            raise Refused(429, f"cluster {cluster.name} writes faster than {self.limiter.rate:g}/s; slow down")
        if len(msg.data) > MAX_VALUE_BYTES:
            raise Refused(413, f"a record may be at most {MAX_VALUE_BYTES} bytes, not {len(msg.data)}")
        if verb == EVENT:
            await self._event(cluster, msg.data)
            return IntakeReply()
        if verb == FOLLOW:
            return await self.feed.follow(cluster, msg.data)
        headers = msg.headers or {}
        bucket, key = headers.get(BUCKET_HEADER, ""), headers.get(KEY_HEADER, "")
        store = self.stores.get(bucket)
        if store is None:
            raise Refused(403, f"a cluster may not use bucket {bucket!r}")
        if not key.startswith(cluster.namespace + ".") or not _valid_key(key):
            raise Refused(403, f"key {key!r} is not in cluster {cluster.name}'s namespace")
        if verb == GET:
            found = await store.get(key)
            if found is None:
                raise Refused(404, f"{bucket} {key} not found")
            return IntakeReply(value=found[0].decode(), revision=found[1])
        rule = self.rules.get(bucket)
        if rule is None:
            raise Refused(403, f"a cluster may not write bucket {bucket!r}")
        revision = _revision(headers.get(REVISION_HEADER))
        if verb == DELETE:
            if not rule.deletable:
                raise Refused(403, f"a cluster may not delete from {bucket}")
            await store.delete(key, revision)
            return IntakeReply()
        if verb != PUT or revision is None:
            raise Refused(400, f"expected verb {PUT} with {REVISION_HEADER}, or {DELETE}, {GET}, {EVENT} or {FOLLOW}")
        try:
            data = await rule.admit(cluster, key, msg.data, revision)
            written = await (store.create(key, data) if revision == 0 else store.write(key, data, revision))
        except ConflictError as err:
            # The record it lost to comes with the refusal: the cluster builds on it without
            # asking again (a create that found the key has read it already).
            current = err.current or await store.get(key)
            exists = isinstance(err, AlreadyExistsError)
            error = f"{bucket} {key} already exists" if exists else f"{bucket} {key} was modified; read it again"
            log.info("intake.refused", cluster=cluster.name, verb=verb, code=409, reason=error)
            value, stored = (current[0].decode(), current[1]) if current else (None, None)
            return IntakeReply(code=409, error=error, value=value, revision=stored)
        return IntakeReply(revision=written)

    async def _event(self, cluster: ClusterCredential, data: bytes) -> None:
        if len(data) > MAX_EVENT_BYTES:
            raise Refused(413, f"an Event may be at most {MAX_EVENT_BYTES} bytes")
        event = await self.events.admit(cluster, data)
        involved = event.involved_object
        subject = event_subject(involved.kind, involved.namespace, involved.name or "-")
        await self.ctx.js.publish(subject, event.to_json(), headers={CONTENT_TYPE: JSON_CONTENT_TYPE})


def _revision(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit():
        raise Refused(400, f"{REVISION_HEADER} must be a number, not {value[:20]!r}")
    return int(value)


def _valid_key(key: str) -> bool:
    return all(token and token not in ("*", ">") for token in key.split(".")) and len(key) <= 512

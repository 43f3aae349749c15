"""NATS auth callout: the hub decides every cluster connection, so credentials need no reload.

The server hands each connection's user and password to `$SYS.REQ.USER.AUTH`; we answer with a
user JWT carrying exactly that identity's permissions (see permissions.py), or with the reason
for refusing it. A cluster's password is the secret its agent generated (we keep only its hash);
anyone else may present a bootstrap token, which grants registration only, and never for a
cluster id that is already registered. A revoked or deleted record refuses the next connection;
`kick` drops the live ones.

Connection attempts are a shared pool (DESIGN §7), so refusing must be cheap and must not delay
valid connections: responders share a queue group across hub replicas and answer concurrently up
to a bound; a refusal is decided, where it can be, by the shape of the credentials, by short-lived
negative caches of unknown token and cluster ids, or by the source's recent failures, all before
any store read. A source that failed too often is refused at once, except for a user and password
that were granted recently, or a registered cluster's own secret: the hub's informer of the
credentials holds each secret's hash, so its valid clusters keep reconnecting from a failing
source (a NAT shared with an attacker) after a hub restart too, and wrong secrets still cost no
store read.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from clusternet_nats.api.meta import CLUSTER_ID_PATTERN, utcnow
from clusternet_nats.api.registration import BOOTSTRAP_TOKEN_PATTERN
from clusternet_nats.api.subjects import AUTH_REQUEST
from clusternet_nats.hub.registration import jwt, permissions
from clusternet_nats.hub.registration.penalties import Penalties
from clusternet_nats.hub.registration.permissions import Permissions
from clusternet_nats.hub.registration.records import ClusterCredential, credential_store, token_store
from clusternet_nats.runtime.responder import Failure, Responder, Unanswerable
from clusternet_nats.store import Informer, StatusStore
from clusternet_nats.store.kv import Versioned
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from pydantic import BaseModel

AUTH_SUBJECT = AUTH_REQUEST.format()
QUEUE = "clusternet-auth-callout"
"""Every hub replica's callout answers in this queue group, so each request is answered once."""
DEFAULT_TARGET_ACCOUNT = "CLUSTERNET"
DEFAULT_CREDENTIAL_TTL = 3600.0
SECRET_PATTERN = re.compile(r"[A-Za-z0-9_-]{32,128}")
"""The shape of an agent's secret (`new_secret`: URL-safe base64); any other password that is
not a bootstrap token is refused without a store read."""
_CLUSTER_ID = re.compile(CLUSTER_ID_PATTERN)

T = TypeVar("T", bound=BaseModel)
log = structlog.get_logger(__name__)


class Refused(Exception):
    """A connection the callout refuses; the message is the reason the server logs."""


@dataclass(frozen=True)
class FloodLimits:
    """How much work refusals may cost, and how much memory remembering them may take."""

    max_in_flight: int = 128
    """Requests worked on at once; the rest wait in the subscription's queue."""
    source_failures: int = 30
    """Failed attempts from one source within `source_window` seconds before it is refused at once."""
    source_window: float = 10.0
    max_sources: int = 10_000
    negative_ttl: float = 5.0
    """How long an unknown token id or cluster id is refused without asking the store again."""
    max_negative: int = 10_000
    known_good_ttl: float = 3600.0
    """How long a granted user and password pass a throttled source's refusal."""
    max_known_good: int = 65_536


@dataclass
class CalloutStats:
    """Counters for tests, benchmarks and logs; `store_reads` shows what refusals cost. What
    every responder counts (requests, answers, errors, drops) is in `AuthCallout.responder.stats`."""

    granted: int = 0
    refused: int = 0
    throttled: int = 0
    """Refused because the source failed too often, without touching the store."""
    store_reads: int = 0


class ExpiringSet:
    """Keys remembered for `ttl` seconds, at most `size` of them (the oldest forgotten first)."""

    def __init__(self, ttl: float, size: int) -> None:
        self.ttl, self.size = ttl, size
        self._expiry: OrderedDict[str, float] = OrderedDict()

    def add(self, key: str, now: float) -> None:
        self._expiry[key] = now + self.ttl
        self._expiry.move_to_end(key)
        while len(self._expiry) > self.size:
            self._expiry.popitem(last=False)

    def has(self, key: str, now: float) -> bool:
        expiry = self._expiry.get(key)
        if expiry is None:
            return False
        if expiry <= now:
            del self._expiry[key]
            return False
        return True

    def discard(self, key: str) -> None:
        self._expiry.pop(key, None)

    def __len__(self) -> int:
        return len(self._expiry)


class SourceFailures:
    """Failed attempts per source, counted in fixed windows, for at most `size` sources.

    A source over the limit is refused until its window ends, so a flood reaches the store at
    most `limit` times per window per source; the least recently failing source is forgotten
    first, so memory stays bounded whatever the number of sources.
    """

    def __init__(self, limit: int, window: float, size: int) -> None:
        self.limit, self.window, self.size = limit, window, size
        self._windows: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def throttled(self, source: str, now: float) -> bool:
        started, failures = self._windows.get(source, (0.0, 0))
        return failures >= self.limit and now - started < self.window

    def failed(self, source: str, now: float) -> bool:
        """Counts a failure; True when it is the one that reaches the limit."""
        started, failures = self._windows.get(source, (now, 0))
        if now - started >= self.window:
            started, failures = now, 0
        self._windows[source] = (started, failures + 1)
        self._windows.move_to_end(source)
        while len(self._windows) > self.size:
            self._windows.popitem(last=False)
        return failures + 1 == self.limit

    def __len__(self) -> int:
        return len(self._windows)


def source_of(host: str) -> str:
    """What failures are counted by: an IPv4 address, or an IPv6 /64 (one site's share, which
    one attacker can fill with addresses)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _shown(text: str) -> str:
    """An attacker-chosen string, short enough to log."""
    return repr(text[:64] + ("..." if len(text) > 64 else ""))


def _pair(user: str, password: str) -> str:
    return hashlib.sha256(f"{user}\0{password}".encode()).hexdigest()


class AuthCallout:
    """Answers the server's auth requests; see the module docstring for how floods are met."""

    def __init__(
        self,
        auth_nc: NATS,
        js: JetStreamContext,
        issuer_seed: str,
        account: str = DEFAULT_TARGET_ACCOUNT,
        ttl: float = DEFAULT_CREDENTIAL_TTL,
        domain: str | None = None,
        *,
        queue: str = QUEUE,
        limits: FloodLimits | None = None,
        servers: frozenset[str] | None = None,
        penalties: Penalties | None = None,
        registered: Informer[ClusterCredential] | None = None,
    ) -> None:
        self.auth_nc, self.issuer_seed, self.account, self.ttl = auth_nc, issuer_seed, account, ttl
        self.domain, self.queue, self.servers = domain, queue, servers
        self.limits = limits or FloodLimits()
        self.penalties = penalties or Penalties()
        """Clusters banned for flooding the hub (penalties.py): refused until the ban ends."""
        self.registered = registered
        """The process's informer of the credentials: a throttled source's registered clusters pass
        by their secret, checked in memory (None: only pairs granted recently pass)."""
        self._issuer = jwt.public_key(issuer_seed)
        self.tokens = token_store(js)
        self.credentials = credential_store(js)
        self.stats = CalloutStats()
        # Every hub replica answers in the queue group, each request in a task of its own.
        name, concurrency = "the hub's auth callout", self.limits.max_in_flight
        self.responder = Responder(auth_nc, AUTH_SUBJECT, self, name=name, queue=queue, concurrency=concurrency)
        self._unknown_tokens = ExpiringSet(self.limits.negative_ttl, self.limits.max_negative)
        self._unknown_clusters = ExpiringSet(self.limits.negative_ttl, self.limits.max_negative)
        self._known_good = ExpiringSet(self.limits.known_good_ttl, self.limits.max_known_good)
        self._failures = SourceFailures(self.limits.source_failures, self.limits.source_window, self.limits.max_sources)
        self._log = log.bind(queue=queue, account=account)

    @property
    def refusals(self) -> int:
        return self.stats.refused

    async def start(self) -> None:
        await self.responder.start()

    def accept(self, msg: Msg) -> jwt.AuthorizationRequest:
        """The server's verified request; anything else (or too late for the server) has no one
        waiting for its answer."""
        try:
            return jwt.authorization_request(msg.data.decode(), self._issuer, servers=self.servers)
        except (jwt.JwtError, UnicodeDecodeError) as err:
            raise Unanswerable(f"not a valid auth request: {err}") from None

    async def answer(self, request: jwt.AuthorizationRequest) -> bytes:
        """Granted, or refused with a reason; the responder answers anything unexpected."""
        bound = self._log.bind(user=request.user[:64], host=request.host)
        response: dict[str, Any] = {"type": "authorization_response", "version": 2}
        try:
            name, granted = await self.decide(request.user, request.password, request.host)
            response["jwt"] = self._user_jwt(request.user_nkey, name, granted)
            self.stats.granted += 1
            bound.info("callout.granted", identity=name)
        except Refused as err:
            response["error"] = str(err)
            self._refused(bound, request.host, str(err))
        return self._signed(request, response)

    def failed(self, request: jwt.AuthorizationRequest, failure: Failure) -> bytes:
        """A refusal saying why (the server logs it): the client retries, as after any refusal."""
        self.stats.refused += 1
        return self._signed(request, {"type": "authorization_response", "version": 2, "error": failure.reason})

    def _signed(self, request: jwt.AuthorizationRequest, response: dict[str, Any]) -> bytes:
        answer = {"sub": request.user_nkey, "aud": request.server_id, "nats": response}
        return jwt.encode(answer, self.issuer_seed).encode()

    def _refused(self, bound: Any, host: str, reason: str) -> None:
        self.stats.refused += 1
        now = time.monotonic()
        source = source_of(host) if host else ""
        if source and self._failures.throttled(source, now):
            bound.debug("callout.refused", reason=reason)
            return
        bound.info("callout.refused", reason=reason)
        if source and self._failures.failed(source, now):
            bound.warning(
                "callout.source_throttled",
                source=source,
                failures=self.limits.source_failures,
                window=self.limits.source_window,
            )

    async def decide(self, user: str, password: str, host: str = "") -> tuple[str, Permissions]:
        """The identity and permissions a connection gets; raises Refused with the reason.

        Cheapest first: the shape of user and password, then the source's recent failures, then
        the negative caches; only then the store. `host` is where the connection comes from."""
        if not _CLUSTER_ID.fullmatch(user):
            raise Refused(f"user {_shown(user)} is not a cluster id")
        token = BOOTSTRAP_TOKEN_PATTERN.fullmatch(password)
        if token is None and not SECRET_PATTERN.fullmatch(password):
            raise Refused(f"cluster {user}: neither its credentials nor a bootstrap token")
        banned = self.penalties.refusal(user)
        if banned:
            raise Refused(banned)
        now = time.monotonic()
        pair = _pair(user, password)
        source = source_of(host) if host else ""
        if source and self._failures.throttled(source, now) and not self._passes_throttle(pair, user, password, now):
            self.stats.throttled += 1
            raise Refused(f"too many failed attempts from {source}")
        try:
            if token is not None:
                decided = await self._as_token_holder(user, password, token.group(1), now)
            else:
                decided = await self._as_cluster(user, password, now)
        except Refused:
            self._known_good.discard(pair)
            raise
        self._known_good.add(pair, now)
        return decided

    def _passes_throttle(self, pair: str, user: str, password: str, now: float) -> bool:
        """Granted within the hour, or the secret of a registered cluster that is not revoked (by
        the informer's copy: no store read, so a flood of wrong secrets still costs none)."""
        if self._known_good.has(pair, now):
            return True
        held = self._held(user)
        return held is not None and not held.revoked and held.has_secret(password)

    def _held(self, cluster_id: str) -> ClusterCredential | None:
        return self.registered.get(cluster_id) if self.registered is not None else None

    async def _as_token_holder(self, cluster_id: str, token: str, token_id: str, now: float) -> tuple[str, Permissions]:
        """A bootstrap token registers a new cluster id, or asks again about a pending one; a
        registered (approved or revoked) id connects only with its own secret."""
        unknown = f"bootstrap token {token_id!r} does not exist or was revoked"
        if self._unknown_tokens.has(token_id, now):
            raise Refused(unknown)
        found = await self._read(self.tokens, token_id)
        if found is None:
            self._unknown_tokens.add(token_id, now)
            raise Refused(unknown)
        reason = found.value.refusal(token, utcnow())
        if reason:
            raise Refused(reason)
        # Read afresh, never from the negative cache: this rule must see a registration at once.
        held = await self._read(self.credentials, cluster_id)
        if held is not None and (held.value.approved or held.value.revoked):
            raise Refused(f"cluster id {cluster_id} is already registered; it connects with its own credentials")
        # The agent is about to register this id; its next connection, with its secret, must not
        # be refused from a cache of a miss just before.
        self._unknown_clusters.discard(cluster_id)
        return f"bootstrap:{cluster_id}", permissions.registering(cluster_id)

    async def _as_cluster(self, cluster_id: str, secret: str, now: float) -> tuple[str, Permissions]:
        """A cluster's own secret: its permissions once approved, and until then registration's,
        so an agent restarted while its request is Pending keeps asking with its own secret."""
        wrong = f"cluster {cluster_id}: no such cluster or wrong secret"
        if self._unknown_clusters.has(cluster_id, now) and self._held(cluster_id) is None:
            # A miss cached before the id registered is stale once the informer holds it: read.
            raise Refused(wrong)
        found = await self._read(self.credentials, cluster_id)
        if found is None:
            self._unknown_clusters.add(cluster_id, now)
            raise Refused(wrong)
        credential = found.value
        if not credential.has_secret(secret):
            raise Refused(wrong)
        if credential.revoked:
            raise Refused(f"cluster {cluster_id} was deleted; its credentials are revoked")
        if not credential.approved:
            return f"registering:{cluster_id}", permissions.registering(cluster_id)
        return cluster_id, permissions.cluster(cluster_id, credential.namespace, self.domain)

    async def _read(self, store: StatusStore[T], key: str) -> Versioned[T] | None:
        self.stats.store_reads += 1
        return await store.get(key)

    def _user_jwt(self, user_nkey: str, name: str, granted: Permissions) -> str:
        nats: dict[str, Any] = {
            "pub": {"allow": granted.publish},
            "sub": {"allow": granted.subscribe},
            "type": "user",
            "version": 2,
        }
        if granted.responses:
            nats["resp"] = {"max": 1, "ttl": 0}
        claims = {"sub": user_nkey, "aud": self.account, "name": name, "exp": int(utcnow().timestamp() + self.ttl)}
        return jwt.encode({**claims, "nats": nats}, self.issuer_seed)

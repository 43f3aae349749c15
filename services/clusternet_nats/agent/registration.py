"""The agent's side of registration: file a ClusterRegistrationRequest once, then reuse it.

The agent generates its own secret, sends only its hash, and keeps the secret with the cluster
id and the granted namespace in `--state-dir` (a row of `credentials.sqlite3`, owner-only; a
process of simulated clusters keeps them all there: agent/statedb.py), so a restarted agent is the same
cluster and connects with its credentials instead of registering again. The link to the hub
is its own leaf node dialling `--hub-leaf-url` (leaf.py), a sidecar leaf at `--leaf-url` given
that remote (sidecar.py), or a direct connection to `--nats-url` with the credentials (as pooled
simulated clusters may).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import re
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import structlog
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.leaf import LeafNode, LeafRemote
from clusternet_nats.agent.sidecar import DIRECTORY as SIDECAR_DIRECTORY
from clusternet_nats.agent.sidecar import SidecarLeaf
from clusternet_nats.agent.statedb import StateDatabase, closed, opened, saved_rows
from clusternet_nats.api.clusters import (
    ClusterRegistrationRequest,
    ClusterRegistrationRequestSpec,
    ManagedCluster,
    ManagedClusterStatus,
)
from clusternet_nats.api.meta import Model
from clusternet_nats.api.registration import (
    APPROVED,
    BOOTSTRAP_TOKEN_PATTERN,
    PENDING,
    RegistrationReply,
    RegistrationRequest,
    credential_hash,
    new_secret,
    registering_inbox_prefix,
    registration_subject,
)
from clusternet_nats.domain.names import registration_request_name
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.store import Versioned
from clusternet_nats.store.backoff import Backoff
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

CREDENTIALS_DATABASE = "credentials.sqlite3"
"""In the state directory: a row per cluster, its id, secret and granted namespace (agent/statedb.py;
owner-only)."""
LEGACY_CREDENTIALS_FILE = "credentials.json"
_CLAIMED_TIMEOUT = 10.0
"""How long an agent asks with each password for an id it may have claimed (`_passwords`)."""
_TOKEN_TIMEOUT = 60.0
_ANSWER_TIMEOUT = 5.0
"""How long one registration request waits for the registrar's answer."""
_RETRY_BASE, _RETRY_CAP = 0.25, 10.0
"""Backoff (seconds) between registration requests, and between first connections to the hub,
after a refusal or a timeout: the first window, and the largest."""
_ROUND_BASE, _ROUND_CAP = 1.0, 60.0
"""Backoff between whole registration rounds (each: own secret, then token) that all failed."""
_REGISTERING_AT_ONCE = 32

SERVICE_ACCOUNT_TOKEN = re.compile(r"[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")
"""What Clusternet's agent takes for a ServiceAccount token (anywhere in the text, as Go's
`MatchString` finds it: pkg/agent/options, serviceAccountTokenFmt)."""


def bootstrap_token_problem(token: str) -> str | None:
    """Why a `--bootstrap-token` cannot register, or None; Clusternet's agent, too, refuses to start
    with a token of neither form. A ServiceAccount token, which Clusternet's agent also accepts
    (one of the parent cluster's), is refused: our hub's auth callout registers clusters with
    bootstrap tokens only, so the agent would be refused by the hub forever. The token itself is
    never repeated: it may be a secret mistyped."""
    if BOOTSTRAP_TOKEN_PATTERN.fullmatch(token):
        return None
    if SERVICE_ACCOUNT_TOKEN.search(token):
        return (
            "a ServiceAccount token is not accepted; the hub registers clusters with bootstrap tokens"
            " only ([a-z0-9]{6}.[a-z0-9]{16}, from `cnet token create`)"
        )
    return "not a bootstrap token; expected [a-z0-9]{6}.[a-z0-9]{16}"


log = structlog.get_logger(__name__)


class RegistrationDenied(Exception):
    """The hub refused the request; the message is its reason."""


class SavedCredentials(Model):
    cluster_id: str
    secret: str
    namespace: str | None = None
    name: str | None = None


def saved_credentials(state_dir: Path) -> dict[str, SavedCredentials]:
    """Every cluster's credentials kept in `state_dir`, by cluster name (for tools and tests)."""
    rows = saved_rows(state_dir / CREDENTIALS_DATABASE)
    return {name: SavedCredentials.model_validate(row) for name, row in rows.items()}


async def request_registration(
    nc: NATS, spec: ClusterRegistrationRequestSpec, secret: str, timeout: float = 60.0, pending_poll: float = 2.0
) -> RegistrationReply:
    """Asks until the hub answers (the link may still be coming up) and, while the request is
    Pending an administrator's decision, asks again; raises RegistrationDenied.

    No answer, or Pending because the hub could not record it, is a failure: the next ask waits
    with exponential backoff and full jitter, so a fleet asking at once does not ask again at once.
    Pending an administrator is polled every `pending_poll` seconds, give or take half of it."""
    request = ClusterRegistrationRequest.new(registration_request_name(spec.cluster_id), spec=spec)
    body = RegistrationRequest(request=request, credential_hash=credential_hash(secret))
    data = body.model_dump_json(by_alias=True, exclude_none=True).encode()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    backoff = Backoff(_RETRY_BASE, _RETRY_CAP)
    while True:
        try:
            msg = await nc.request(registration_subject(spec.cluster_id), data, timeout=_ANSWER_TIMEOUT)
        except (NoRespondersError, NatsTimeoutError):
            if loop.time() > deadline:
                raise
            log.info("registration.waiting_for_hub", cluster_id=spec.cluster_id, attempt=backoff.attempt)
            await backoff.wait(deadline)
            continue
        reply = RegistrationReply.model_validate_json(msg.data)
        if reply.result == APPROVED:
            return reply
        if reply.result != PENDING:
            raise RegistrationDenied(reply.error_message or reply.result)
        if reply.error_message:  # the hub could not record the request (its store unreachable)
            log.info("registration.not_recorded", cluster_id=spec.cluster_id, error=reply.error_message)
            await backoff.wait(deadline)
            continue
        log.info("registration.pending_approval", cluster_id=spec.cluster_id)
        backoff.reset()
        await asyncio.sleep(random.uniform(pending_poll / 2, pending_poll * 1.5))


@dataclass(frozen=True)
class RegistrationSettings:
    bootstrap_token: str
    state_dir: Path
    hub_leaf_url: str | None = None
    """Run a leaf node of our own that dials this (`tls://host:port`); the agent connects only to it."""
    hub_ca: Path | None = None
    """CA of the hub's leaf-node TLS certificate."""
    leaf_url: str | None = None
    """A leaf already running beside the agent (a sidecar): connect to it and hand it the remote
    (sidecar.py) instead of starting a leaf of our own."""
    gate: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(_REGISTERING_AT_ONCE), compare=False)
    """Shared by the process's clusters: at most this many register at once. A process of N
    simulated clusters comes up in waves the hub's callout answers within the server's auth
    timeout, instead of N connections at one instant, most of them timed out and retried."""


class Enrollment:
    """One cluster's registration state and its link to the hub."""

    def __init__(self, settings: RegistrationSettings, identity: ClusterIdentity) -> None:
        self.settings, self.identity = settings, identity
        self.state_dir = settings.state_dir / identity.name
        self.leaf: LeafNode | SidecarLeaf | None = None
        self.created: ManagedCluster | None = None
        """The ManagedCluster the registrar created in answer to this agent, if it did."""
        self.created_status: Versioned[ManagedClusterStatus] | None = None
        """Its first status, created with it, at its revision."""

    async def connect_url(self, nats_url: str) -> str:
        """Registers if this cluster never did, then returns the URL to connect to as the cluster."""
        credentials = opened(self.settings.state_dir / CREDENTIALS_DATABASE)
        try:
            saved = await self._registered(credentials, nats_url)
        finally:
            await closed(credentials)
        return await self._link(saved.secret, nats_url)

    async def _registered(self, credentials: StateDatabase, nats_url: str) -> SavedCredentials:
        """The credentials kept, after registering if this cluster never did."""
        ident = self.identity
        row = await credentials.load(ident.name)
        if row is None and (row := await _kept_before(credentials, self.settings.state_dir, ident.name)) is not None:
            await credentials.put(ident.name, row)
        saved = SavedCredentials.model_validate(row) if row is not None else None
        if saved is None or saved.cluster_id != ident.cluster_id or not saved.namespace:
            # The secret is kept before asking, so an agent restarted while its request is
            # Pending, or before it kept the approval, asks again as the same claimant
            # (`_passwords`).
            claimed = saved is not None and saved.cluster_id == ident.cluster_id
            secret = saved.secret if saved is not None and claimed else new_secret()
            await credentials.put(ident.name, _row(SavedCredentials(cluster_id=ident.cluster_id, secret=secret)))
            spec = ClusterRegistrationRequestSpec(
                cluster_id=ident.cluster_id,
                cluster_name=ident.name,
                cluster_type=ident.cluster_type,
                sync_mode=ident.sync_mode,
                cluster_labels=ident.configured_labels or None,
            )
            reply = await self._register(spec, secret, nats_url, claimed)
            self.created = reply.managed_cluster
            if reply.managed_cluster_status is not None and reply.managed_cluster_status_revision:
                self.created_status = Versioned(reply.managed_cluster_status, reply.managed_cluster_status_revision)
            saved = SavedCredentials(
                cluster_id=ident.cluster_id,
                secret=secret,
                namespace=reply.dedicated_namespace,
                name=reply.managed_cluster_name,
            )
            await credentials.put(ident.name, _row(saved))
            log.info("registration.approved", cluster_id=ident.cluster_id, namespace=saved.namespace)
        return saved

    async def _register(
        self, spec: ClusterRegistrationRequestSpec, secret: str, nats_url: str, claimed: bool
    ) -> RegistrationReply:
        """Rounds of `_ask` until one is answered: a hub that is down, swamped or refusing is
        asked again after a backoff with full jitter (client-go's bootstrap, too, never gives
        up); only a denial ends it."""
        backoff = Backoff(_ROUND_BASE, _ROUND_CAP)
        while True:
            try:
                async with self.settings.gate:
                    return await self._ask(spec, secret, nats_url, self._passwords(secret, claimed))
            except RegistrationDenied:
                raise
            except Exception as err:  # refused or unanswered: ask again later
                delay = backoff.next_delay()
                log.warning("registration.retry", cluster_id=spec.cluster_id, error=repr(err), seconds=round(delay, 1))
                await asyncio.sleep(delay)
            claimed = True  # the round may have filed the claim before its answer was lost

    def _passwords(self, secret: str, claimed: bool) -> list[tuple[str, float]]:
        """What one round asks with, in turn, and for how long each. A new id: the token. An id
        this agent may have claimed already (its secret kept before it asked): the token first,
        then its own secret. After a crash most kept secrets were never filed (a process keeps
        its clusters' secrets before they queue to ask, `_REGISTERING_AT_ONCE` at a time), the
        token is refused only for an id already approved, which its own secret then connects,
        and every refusal counts against the source the fleet shares: asked with the secret
        first, a power cut mid-storm cost a fleet behind one address minutes of throttling."""
        token = self.settings.bootstrap_token
        if not claimed:
            return [(token, _TOKEN_TIMEOUT)]
        return [(token, _CLAIMED_TIMEOUT), (secret, _CLAIMED_TIMEOUT)]

    async def _ask(
        self, spec: ClusterRegistrationRequestSpec, secret: str, nats_url: str, attempts: list[tuple[str, float]]
    ) -> RegistrationReply:
        """Files the request authenticated by each password in turn until one is answered; a
        password the server refuses is not tried again in this round."""
        for i, (password, timeout) in enumerate(attempts):
            conn = Connection(await self._link(password, nats_url), "clusternet-agent/register", retry_cap=_RETRY_CAP)
            conn.inbox_prefix = registering_inbox_prefix(spec.cluster_id)
            try:
                nc = await conn.connect(timeout, retry_refused=False)
                return await request_registration(nc, spec, secret, timeout=timeout)
            except RegistrationDenied:
                raise
            except Exception as err:  # refused or unanswered: try the next password
                if i == len(attempts) - 1:
                    raise
                log.info("registration.next_password", cluster_id=spec.cluster_id, error=repr(err))
            finally:
                await conn.close(drain=False)  # answered or given up: nothing left to receive
        raise AssertionError("no registration attempt")

    async def _link(self, password: str, nats_url: str) -> str:
        """The URL to connect to with this password: our leaf's (dialling with it), or the hub's."""
        if not self.settings.hub_leaf_url:
            return _with_user(nats_url, self.identity.cluster_id, password)
        self.leaf = self.leaf or self._new_leaf()
        remote = LeafRemote(self.settings.hub_leaf_url, self.identity.cluster_id, password, self.settings.hub_ca)
        await self.leaf.start(remote)
        return self.leaf.url

    def _new_leaf(self) -> LeafNode | SidecarLeaf:
        if self.settings.leaf_url:
            return SidecarLeaf(self.settings.leaf_url, self.settings.state_dir / SIDECAR_DIRECTORY)
        return LeafNode(self.state_dir / "leaf", self.identity.name)

    async def close(self) -> None:
        if self.leaf is not None:
            await self.leaf.stop()


_legacy_scans: weakref.WeakKeyDictionary[StateDatabase, asyncio.Future[frozenset[str]]] = weakref.WeakKeyDictionary()


async def _kept_before(credentials: StateDatabase, state_dir: Path, name: str) -> dict[str, Any] | None:
    """The credentials an agent of an earlier version kept in `<state-dir>/<cluster>/credentials.json`:
    copied into the database, so an upgraded agent is still its cluster (the hub refuses a second
    claim on a registered id). The directory is scanned once while the database is open, not once
    per cluster: a process starting thousands of new clusters would look for thousands of files."""
    scan = _legacy_scans.get(credentials)
    if scan is None:
        scan = _legacy_scans[credentials] = asyncio.ensure_future(asyncio.to_thread(_holding_legacy, state_dir))
    try:
        holding = await asyncio.shield(scan)
    except Exception:
        if _legacy_scans.get(credentials) is scan:
            del _legacy_scans[credentials]  # the next cluster scans again
        raise
    if name not in holding:
        return None
    return await asyncio.to_thread(_read_legacy, state_dir / name / LEGACY_CREDENTIALS_FILE)


def _holding_legacy(state_dir: Path) -> frozenset[str]:
    """The clusters with a credentials file of an earlier version in `state_dir`."""
    return frozenset(path.parent.name for path in state_dir.glob(f"*/{LEGACY_CREDENTIALS_FILE}"))


def _read_legacy(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    row: dict[str, Any] = json.loads(path.read_text())
    return row


def _row(saved: SavedCredentials) -> dict[str, Any]:
    return saved.model_dump(mode="json", by_alias=True, exclude_none=True)


def _with_user(nats_url: str, user: str, password: str) -> str:
    """Each of the comma-separated URLs with this user and password (replacing any given)."""
    out = []
    for url in nats_url.split(","):
        parts = urlsplit(url.strip())
        netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{parts.netloc.rpartition('@')[2]}"
        out.append(urlunsplit(parts._replace(netloc=netloc)))
    return ",".join(out)


async def registered_process(common: CommonOptions, first: Enrollment) -> CommonOptions:
    """The process-wide options of an agent in registration mode: its own connection (health,
    metrics) is its first cluster's, registered now if need be, and it creates no buckets."""
    url = await first.connect_url(common.nats_url)
    return dataclasses.replace(common, nats_url=url, nats_creds=None, ensure_store=False)

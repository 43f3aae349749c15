"""Every NATS subject and bucket the system uses, and who may use each: one table.

The wire modules (`api/push.py`, `api/registration.py`, the predictor's messages,
`store/buckets.py`), the services' subscriptions and the permissions the auth callout grants
(hub/registration/permissions.py) are all derived from it, so a subject is spelled once and a
grant cannot drift from what the code uses. A new subject or bucket goes here first;
`tests/subjects/` runs the system on a real nats-server and fails on any subject used that no
entry matches.

A pattern is tokens separated by dots. `{cluster_id}` and `{namespace}` are bound to the
identity a grant is for; other `{placeholders}` are free: one token each, except those in
`MULTI_TOKEN` (a cluster or object name may hold dots), which take one or more. JetStream's own
subjects (`$JS.API`, acks, flow control) and nats-py's default `_INBOX.` belong to the hub side,
which is trusted with all of them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET
from clusternet_nats.api.registry import all_kinds, by_kind

MULTI_TOKEN = frozenset({"name", "key", "rest"})
BOUND = ("cluster_id", "namespace")
"""Placeholders a grant fills from the identity it is for."""
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class Party(StrEnum):
    """Who publishes or subscribes."""

    HUB = "hub side"
    """hub, scheduler, deployer, predictor, bridge: trusted, each a user of the CLUSTERNET account."""
    CLUSTER = "cluster"
    """A registered cluster's credential (its agent)."""
    REGISTERING = "registering"
    """A bootstrap token's holder, or a claimant whose request is still pending."""
    SERVER = "nats-server"
    """The server itself: auth requests, JetStream deliveries and answers."""
    SYSTEM = "system account"
    """The hub's system-account user (finding and kicking connections)."""
    CALLOUT = "auth callout"
    """The hub's callout user in the AUTH account."""


@dataclass(frozen=True)
class Subject:
    pattern: str
    publishers: frozenset[Party]
    subscribers: frozenset[Party]
    doc: str

    def format(self, **values: str) -> str:
        """The concrete subject; every placeholder must be given."""
        return self.pattern.format(**values)

    def filter(self, **bound: str) -> str:
        """A subscription filter: given placeholders filled, others `*` (a multi-token one `>`,
        ending the filter)."""
        tokens: list[str] = []
        for token in self.pattern.split("."):
            free = [p for p in _PLACEHOLDER.findall(token) if p not in bound]
            if free and token != f"{{{free[0]}}}":
                raise ValueError(f"{self.pattern}: NATS cannot wildcard part of the token {token!r}")
            if any(p in MULTI_TOKEN for p in free):
                return ".".join([*tokens, ">"])
            tokens.append("*" if free else token.format(**bound))
        return ".".join(tokens)

    def prefix(self, **bound: str) -> str:
        """The tokens before the first placeholder not given (e.g. a cluster's inbox prefix)."""
        return self._bound_prefix(bound)[0]

    def grant(self, **bound: str) -> str:
        """A permission or stream subject: `prefix` then `>`, or the whole subject when every
        placeholder is given."""
        prefix, complete = self._bound_prefix(bound)
        return prefix if complete else f"{prefix}.>"

    def _bound_prefix(self, bound: dict[str, str]) -> tuple[str, bool]:
        tokens: list[str] = []
        for token in self.pattern.split("."):
            if any(p not in bound for p in _PLACEHOLDER.findall(token)):
                return ".".join(tokens), False
            tokens.append(token.format(**bound))
        return ".".join(tokens), True

    def parse(self, subject: str) -> dict[str, str] | None:
        """The placeholders' values in `subject`, or None when it does not match."""
        found = self._regex.fullmatch(subject)
        return None if found is None else found.groupdict()

    def matches(self, subject: str) -> bool:
        """Whether a concrete subject (published, or named as a reply) is one of this entry's."""
        return self._regex.fullmatch(subject) is not None

    def admits(self, filter_subject: str) -> bool:
        """Whether a subscription filter is one of this entry's: the pattern with any tokens
        wildcarded, or cut short by `>` at or after its first multi-token placeholder."""
        return self._open_regex.fullmatch(filter_subject) is not None

    @cached_property
    def _regex(self) -> re.Pattern[str]:
        return re.compile(r"\.".join(self._token_regexes(open_ended=False)))

    @cached_property
    def _open_regex(self) -> re.Pattern[str]:
        return re.compile(r"\.".join(self._token_regexes(open_ended=True)))

    def _token_regexes(self, open_ended: bool) -> list[str]:
        parts: list[str] = []
        for token in self.pattern.split("."):
            piece, last = "", 0
            for found in _PLACEHOLDER.finditer(token):
                name = found.group(1)
                if name in MULTI_TOKEN and open_ended:
                    return [*parts, re.escape(token[: found.start()]) + r"[^.]+(?:\.[^.]+)*"]
                piece += re.escape(token[last : found.start()])
                piece += f"(?P<{name}>[^.]+(?:\\.[^.]+)*)" if name in MULTI_TOKEN else f"(?P<{name}>[^.]+)"
                last = found.end()
            parts.append(piece + re.escape(token[last:]))
        return parts


HUB, CLUSTER, SERVER = frozenset({Party.HUB}), frozenset({Party.CLUSTER}), frozenset({Party.SERVER})

REGISTRATION = Subject(
    "clusternet.registration.{cluster_id}",
    frozenset({Party.REGISTERING, Party.CLUSTER}),
    HUB,
    "A ClusterRegistrationRequest (api/registration.py), answered by the hub's registrar.",
)
REGISTERING_INBOX = Subject(
    "_INBOX_REG_{cluster_id}.{rest}",
    HUB,
    frozenset({Party.REGISTERING, Party.CLUSTER}),
    "Replies to a registration: a prefix of the id's own, never the registered cluster's inbox.",
)
CLUSTER_INBOX = Subject(
    "_INBOX_{cluster_id}.{rest}",
    frozenset({Party.HUB, Party.SERVER}),
    CLUSTER,
    "A registered cluster's inbox: the intake's answers, and its Descriptions consumer's deliveries"
    " (`DESCRIPTIONS_DELIVERY`); only it may subscribe.",
)
DESCRIPTIONS_DELIVERY = Subject(
    "_INBOX_{cluster_id}.descriptions",
    SERVER,
    CLUSTER,
    "Where the consumer the hub makes for a cluster delivers its Descriptions (inside its inbox).",
)
INTAKE = Subject(
    "clusternet.intake.{namespace}.{verb}",
    CLUSTER,
    HUB,
    "A cluster's reads, writes, Events and `follow`, checked and stored by the hub (api/intake.py).",
)
PROXY = Subject(
    "clusternet.proxy.{namespace}.{name}.{verb}",
    HUB,
    CLUSTER,
    "The hub's requests to one cluster's agent (Push mode: apply, prune; api/push.py).",
)
SOCKETS = Subject(
    "clusternet.sockets.{namespace}.{stream}",
    HUB,
    CLUSTER,
    "The hub's frames of one proxied HTTP exchange to a cluster's agent (`sockets/<id>/proxy`;"
    " api/proxy.py); answered on `CLUSTER_REPLY`.",
)
CLUSTER_REPLY = Subject(
    "clusternet.reply.{namespace}.{id}",
    CLUSTER,
    HUB,
    "A cluster's answers to the hub's requests (`allow_responses` does not cross leaf links).",
)
HEARTBEAT = Subject(
    "clusternet.heartbeat.{namespace}.{cluster_id}",
    CLUSTER,
    HUB,
    "A cluster's liveness between status changes (api/heartbeat.py): core NATS, nothing stored; read"
    " by every hub replica's cluster-health controller.",
)
HEARTBEAT_ANSWER = Subject(
    "_INBOX_{cluster_id}.heartbeat",
    HUB,
    CLUSTER,
    "The hub's answer to a heartbeat whose cluster's stored status is not the one it last wrote"
    " (the hub marked it Unknown): write it again. Inside the cluster's inbox.",
)
PREDICTOR = Subject(
    "predictor.{namespace}.{name}.accommodation",
    HUB,
    HUB,
    "How many replicas of a shape fit a cluster, answered by the predictor (a queue group).",
)
PREDICT = Subject(
    "predictor.predict",
    HUB,
    HUB,
    "Replicas each listed cluster can still take, per feed, in one request (the scheduler's Predict).",
)
UNSCHEDULED = Subject(
    "predictor.unscheduled",
    HUB,
    HUB,
    "Replicas not placed, or placed but not running yet (the hub's `GET /replicas/unscheduled`).",
)
EVENTS = Subject(
    "events.{kind}.{scope}.{key}",
    HUB,
    HUB,
    "Kubernetes-style Events (stream EVENTS); `scope` is the namespace or `_`. Clusters send theirs"
    " through the intake.",
)
KV = Subject(
    "$KV.{bucket}.{key}",
    HUB,
    HUB,
    "A bucket's keys (JetStream KV); only the hub side writes or reads them directly.",
)
HUB_INBOX = Subject(
    "_INBOX.{rest}", frozenset({Party.HUB, Party.SERVER}), HUB, "nats-py's default inboxes, hub side only."
)
PUBLISH_ACKS = Subject(
    "_INBOX.{batch}.{index}",
    SERVER,
    HUB,
    "JetStream's acks of one pipelined batch of publishes (store/kv.py), a token per message; hub side only.",
)
JETSTREAM = Subject(
    "$JS.{rest}",
    frozenset({Party.HUB, Party.SERVER}),
    HUB,
    "JetStream's API, acks and flow control (nats-py's), with or without a domain; hub side only.",
)
AUTH_REQUEST = Subject(
    "$SYS.REQ.USER.AUTH",
    SERVER,
    frozenset({Party.CALLOUT}),
    "The server's auth callout requests, answered by the hub's callout in the AUTH account.",
)
SERVER_INBOX = Subject(
    "$SYS._INBOX.{rest}",
    frozenset({Party.CALLOUT}),
    SERVER,
    "The server's own inboxes: where the callout's answers go.",
)
SERVER_PING = Subject(
    "$SYS.REQ.SERVER.PING.{what}",
    frozenset({Party.SYSTEM}),
    SERVER,
    "Every server's CONNZ or LEAFZ, to find a revoked cluster's connections.",
)
SERVER_KICK = Subject(
    "$SYS.REQ.SERVER.{server_id}.KICK",
    frozenset({Party.SYSTEM}),
    SERVER,
    "Drops one connection of a revoked or banned cluster.",
)

SUBJECTS: tuple[Subject, ...] = (
    CLUSTER_INBOX,
    DESCRIPTIONS_DELIVERY,
    INTAKE,
    CLUSTER_REPLY,
    HEARTBEAT,
    HEARTBEAT_ANSWER,
    PROXY,
    SOCKETS,
    REGISTRATION,
    REGISTERING_INBOX,
    PREDICTOR,
    PREDICT,
    UNSCHEDULED,
    EVENTS,
    KV,
    HUB_INBOX,
    PUBLISH_ACKS,
    JETSTREAM,
    AUTH_REQUEST,
    SERVER_INBOX,
    SERVER_PING,
    SERVER_KICK,
)
"""In the order a cluster's grants list them."""


def grants(party: Party, cluster_id: str, namespace: str | None = None) -> tuple[list[str], list[str]]:
    """(publish, subscribe) permissions of a cluster or registering identity, from the table:
    every subject the party publishes or subscribes, bound to its id and namespace."""
    bound = {"cluster_id": cluster_id, **({"namespace": namespace} if namespace else {})}
    publish, subscribe = _grant_templates(party, frozenset(bound))
    return [grant.format(**bound) for grant in publish], [grant.format(**bound) for grant in subscribe]


@functools.cache
def _grant_templates(party: Party, bound: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`grants` with the bound placeholders left in (`{cluster_id}`): worked out from the table
    once per party, not once per connection (the callout answers two per registering cluster).
    Whether one grant covers another does not depend on the values filled in: a value is one
    token, never a wildcard."""
    if party not in (Party.CLUSTER, Party.REGISTERING):
        raise ValueError(f"{party} is not granted per identity")
    placeholders = {name: f"{{{name}}}" for name in bound}

    def granted(subjects: list[Subject]) -> tuple[str, ...]:
        out: list[str] = []
        for subject in subjects:
            if not set(_PLACEHOLDER.findall(subject.pattern)) & set(BOUND) <= bound:
                continue  # bound to a namespace this identity does not have (yet)
            grant = subject.grant(**placeholders)
            if not any(_covers(held, grant) for held in out):
                out.append(grant)
        return tuple(out)

    publish = granted([s for s in SUBJECTS if party in s.publishers])
    subscribe = granted([s for s in SUBJECTS if party in s.subscribers])
    return publish, subscribe


def _covers(held: str, wanted: str) -> bool:
    """Whether NATS permission `held` already allows everything `wanted` names."""
    have, want = held.split("."), wanted.split(".")
    for i, token in enumerate(have):
        if token == ">":
            return len(want) > i
        if i >= len(want) or (token != "*" and token != want[i]) or (token == "*" and want[i] == ">"):
            return False
    return len(have) == len(want)


def subject_for(subject: str) -> Subject | None:
    """The entry a concrete subject (or reply subject) belongs to, or None."""
    return next((entry for entry in SUBJECTS if entry.matches(subject)), None)


@dataclass(frozen=True)
class Bucket:
    name: str
    cluster_writes: bool = False
    """A registered cluster writes its own keys here, through the intake (hub/intake/admission.py)."""
    cluster_reads: bool = False
    """A registered cluster reads its own keys here, through the intake's `get`."""
    registration: bool = False
    """Made by the hub in registration mode only (hub/registration/records.py), not by every service."""


BINDINGS_BUCKET = "bindings"
LEASES_BUCKET = "leases"
"""Hub-side replicas' member and partition leases (runtime/partitions.py); hub side only."""
TOKENS_BUCKET = "bootstraptokens"
CREDENTIALS_BUCKET = "clustercredentials"
EVENTS_STREAM = "EVENTS"


def _buckets() -> tuple[Bucket, ...]:
    description, cluster = by_kind("Description"), by_kind("ManagedCluster")
    # What a cluster reports (its Descriptions' status, its heartbeat, its node inventory, its
    # aggregated node labels) and what it is given (its Descriptions).
    written = {description.status_bucket, cluster.status_bucket, NODE_INVENTORIES_BUCKET, cluster.bucket}
    read = written | {description.bucket}
    names = [BINDINGS_BUCKET, NODE_INVENTORIES_BUCKET, LEASES_BUCKET]
    for info in all_kinds():
        names += [info.bucket, *([info.status_bucket] if info.status_bucket else [])]
    made = tuple(Bucket(n, n in written, n in read) for n in names)
    return made + tuple(Bucket(n, registration=True) for n in (TOKENS_BUCKET, CREDENTIALS_BUCKET))


BUCKETS: tuple[Bucket, ...] = _buckets()
"""Every KV bucket: one per kind and one per kind's status, the scheduler's bindings, the
agents' node inventories, and registration's tokens and credentials (hub side only)."""


def cluster_written_buckets() -> frozenset[str]:
    return frozenset(b.name for b in BUCKETS if b.cluster_writes)


def cluster_read_buckets() -> frozenset[str]:
    return frozenset(b.name for b in BUCKETS if b.cluster_reads)

"""The wire contract of cluster registration, shared by the hub's registrar and the agent.

An agent holding only a bootstrap token asks `clusternet.registration.<clusterId>`; it sends the
SHA-256 of a secret it generated itself, never the secret, so a reply or a stored record read by
someone else grants nothing. With the secret as its password it later connects as its cluster.
Each identity reads replies on its own inbox prefix, so no user ever needs `_INBOX.>`.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime

from clusternet_nats.api.clusters import ClusterRegistrationRequest, ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import Model
from clusternet_nats.api.schemas import register_message
from clusternet_nats.api.subjects import (
    CLUSTER_INBOX,
    CLUSTER_REPLY,
    DESCRIPTIONS_DELIVERY,
    INTAKE,
    REGISTERING_INBOX,
    REGISTRATION,
)
from pydantic import Field

BOOTSTRAP_TOKEN_PATTERN = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
"""A bootstrap token, `<id>.<secret>` as Kubernetes' (k8s.io/cluster-bootstrap); group 1 is its id.
The hub's callout and token file and the agent's flag check all read it here."""
BOOTSTRAP_TOKENS_PATH = "/apis/registration.clusternet-nats.io/v1/bootstraptokens"
"""The hub's HTTP path for creating (POST), listing (GET) and revoking (DELETE .../<id>) tokens."""
APPROVALS_PATH = "/apis/registration.clusternet-nats.io/v1/approvals"
"""POST `<path>/<ClusterRegistrationRequest name>` with an ApprovalDecision (`cnet approve|deny`)."""
APPROVED, DENIED, PENDING = "Approved", "Denied", "Pending"
"""Clusternet's ClusterRegistrationRequest results (status.result)."""


def registration_subject(cluster_id: str) -> str:
    return REGISTRATION.format(cluster_id=cluster_id)


def inbox_prefix(cluster_id: str) -> str:
    """Where replies to a registered cluster's requests arrive; only its own credential may
    subscribe here, so no one else ever learns its pull or request inboxes."""
    return CLUSTER_INBOX.prefix(cluster_id=cluster_id)


def registering_inbox_prefix(cluster_id: str) -> str:
    """Where replies to a bootstrap token holder's registration request arrive: a prefix of its
    own, so a token never grants a read of the registered cluster's inbox."""
    return REGISTERING_INBOX.prefix(cluster_id=cluster_id)


def agent_consumer_name(namespace: str) -> str:
    """The one consumer that delivers a cluster's Descriptions, on `KV_descriptions` filtered to
    its namespace; the hub creates it (api/intake.py `follow`), the cluster cannot touch it."""
    return f"agent-{namespace}"


def descriptions_deliver_subject(cluster_id: str) -> str:
    """Where that consumer delivers: inside the cluster's own inbox, which only it may read."""
    return DESCRIPTIONS_DELIVERY.format(cluster_id=cluster_id)


def intake_subject(namespace: str, verb: str) -> str:
    """Clusters never publish into JetStream streams: each write is a request here, which the hub
    checks and stores (hub/intake/)."""
    return INTAKE.format(namespace=namespace, verb=verb)


def reply_prefix(namespace: str) -> str:
    """Where a cluster publishes answers to the hub's requests. `allow_responses` does not cover
    leaf-node links, so the hub asks with a reply subject the cluster's permissions name."""
    return CLUSTER_REPLY.prefix(namespace=namespace)


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def credential_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class RegistrationRequest(Model):
    """What an agent sends: Clusternet's request object plus the hash of its own secret."""

    request: ClusterRegistrationRequest
    credential_hash: str = Field(pattern=r"^[0-9a-f]{64}$")


class RegistrationReply(Model):
    """The hub's answer: the request's status as Clusternet reports it, minus any credential."""

    result: str
    dedicated_namespace: str | None = None
    managed_cluster_name: str | None = None
    error_message: str | None = None
    managed_cluster: ManagedCluster | None = None
    """Approved by this answer: the ManagedCluster as the registrar created it, with its
    resourceVersion, so the agent's first heartbeat builds on it instead of reading it back (in a
    registration storm every read is a request to the hub's intake). None when it existed before."""
    managed_cluster_status: ManagedClusterStatus | None = None
    """Created by this answer: the cluster's first status (its ClusterInit condition), which the
    agent's first report builds on instead of being refused by it. None when one existed before."""
    managed_cluster_status_revision: int | None = None
    """The revision `managedClusterStatus` was written at."""


DEFAULT_TOKEN_TTL_SECONDS = 24 * 3600.0
"""kubeadm's default lifetime of a bootstrap token."""


class BootstrapTokenRequest(Model):
    """`cnet token create`: how long the token lives; 24 h when not said (kubeadm's default), 0 for
    until revoked."""

    ttl_seconds: float = Field(default=DEFAULT_TOKEN_TTL_SECONDS, ge=0)
    description: str = ""


class BootstrapTokenView(Model):
    """A token as the hub shows it: the secret part only in the answer to its creation."""

    token_id: str
    expires: datetime | None = None
    description: str = ""
    token: str | None = None


class ApprovalDecision(Model):
    """An administrator's answer to a pending ClusterRegistrationRequest (`--manual-approval`)."""

    approved: bool
    reason: str = ""


register_message(ApprovalDecision, "registration.clusternet-nats.io", "v1")
register_message(BootstrapTokenRequest, "registration.clusternet-nats.io", "v1")
register_message(BootstrapTokenView, "registration.clusternet-nats.io", "v1")
register_message(RegistrationRequest, "clusters.clusternet.io", "v1beta1")
register_message(RegistrationReply, "clusters.clusternet.io", "v1beta1")

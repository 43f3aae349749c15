"""The wire contract of a registered cluster's access to the store: everything goes through the hub.

A cluster has no JetStream API at all. Its answers would go wherever it names as the reply, and
the server stores whatever lands on a stream's subjects: a direct get of its own key answered
into another cluster's key, or its consumer's deliveries pulled into one, were writes into
another cluster's records that no permission sees (found by tests/isolation/test_attacks_deputy).
So it reads its own keys (`get`) and asks the hub to (re)start the consumer that delivers its
Descriptions (`follow`) to a subject the hub fixes inside its own inbox; the hub answers only a
request whose reply is that cluster's inbox.

Nor does a cluster publish into a stream. NATS cannot filter the headers a publisher
sets, so a direct publish could carry `Nats-Rollup` (purge everyone's keys),
`Nats-Expected-Last-Subject-Sequence-Subject` (learn another key's revision from the error) or
any future header, and its size and number of keys would be bounded only by shared stream
limits. Instead each write is a request to `clusternet.intake.<namespace>.<verb>`
(api/registration.py: intake_subject); NATS permissions prove the namespace, and the hub's
intake (hub/intake/) checks the origin, the key, the body and the cluster's rate before it
writes with headers of its own.
"""

from __future__ import annotations

from clusternet_nats.api.meta import Model
from clusternet_nats.api.schemas import register_message
from pydantic import Field

PUT, DELETE, EVENT, GET, FOLLOW = "put", "delete", "event", "get", "follow"
VERBS = (PUT, DELETE, EVENT, GET, FOLLOW)
BUCKET_HEADER = "Clusternet-Bucket"
KEY_HEADER = "Clusternet-Key"
REVISION_HEADER = "Clusternet-Expected-Revision"
"""The revision the write is based on: 0 creates, absent (delete only) means unconditional."""
MAX_VALUE_BYTES = 1024 * 1024
"""A cluster's record (a Description's status, its heartbeat, its node inventory) is small;
1 MiB, the default NATS payload, bounds what one write may store."""
MAX_EVENT_BYTES = 16 * 1024
DELIVERY_HEARTBEAT = 30.0
"""Seconds between the idle heartbeats of a cluster's Descriptions consumer: two missed, and the
agent asks the hub to follow again (a consumer lost with a server, or deliveries lost on a cut
leaf link, which the heartbeat's `Nats-Last-Consumer` reveals). Each heartbeat also makes
nats-server look for the consumer's next message, reading the stream forward from where the
consumer stood, so with a consumer per cluster the interval sets how often thousands of
consumers re-read what the deployer wrote meanwhile: every 10 s, that was 22-35 of nats-server's
CPU-s in a 10,000-cluster rollout, every 30 s 9-12 (docs/architecture.md, "Ten thousand
clusters")."""


class FollowRequest(Model):
    """Start delivering the cluster's Descriptions after `startSequence` (0: the latest of each key)."""

    start_sequence: int = Field(default=0, ge=0)


class IntakeReply(Model):
    """The intake's answer: the stored revision (and, for `get`, the value; for `follow`, how
    many deliveries are pending), or an HTTP-like code and why it was refused. A 409 carries the
    record the write lost to (value and revision), when there is one, to build the next on."""

    revision: int | None = None
    value: str | None = None
    """`get`, and a 409: the record as stored (JSON text)."""
    pending: int | None = None
    """`follow`: messages the new consumer has to deliver before it is caught up."""
    code: int | None = None
    error: str | None = None


register_message(FollowRequest, "clusters.clusternet.io", "v1beta1")
register_message(IntakeReply, "clusters.clusternet.io", "v1beta1")

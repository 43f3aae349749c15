"""The wire contract of cluster writes: what a registered cluster asks the hub to store.

A cluster never publishes into a JetStream stream. NATS cannot filter the headers a publisher
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

PUT, DELETE, EVENT = "put", "delete", "event"
VERBS = (PUT, DELETE, EVENT)
BUCKET_HEADER = "Clusternet-Bucket"
KEY_HEADER = "Clusternet-Key"
REVISION_HEADER = "Clusternet-Expected-Revision"
"""The revision the write is based on: 0 creates, absent (delete only) means unconditional."""
MAX_VALUE_BYTES = 1024 * 1024
"""A cluster's record (a Description's status, its heartbeat, its node inventory) is small;
1 MiB, the default NATS payload, bounds what one write may store."""
MAX_EVENT_BYTES = 16 * 1024


class IntakeReply(Model):
    """The intake's answer: the stored revision, or an HTTP-like code and why it was refused."""

    revision: int | None = None
    code: int | None = None
    error: str | None = None


register_message(IntakeReply, "clusters.clusternet.io", "v1beta1")

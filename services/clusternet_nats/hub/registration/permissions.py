"""What each identity may publish and subscribe: the isolation between clusters, in NATS terms.

A cluster touches JetStream only through API subjects that name what they touch, and only what
is its own: direct gets carry the key in the subject (`DIRECT.GET.<stream>.$KV.<bucket>.<its
namespace>.>`), and it may create, pull from and delete exactly one consumer, whose name the
grant fixes (`agent_consumer_name`) and whose filter is in the create subject (the server
rejects a body whose filter differs). So it holds at most one consumer, cannot find, retarget,
pull from or delete another's, and sends nothing to the JetStream API queue beyond its own
consumer's life cycle. Stream and consumer info, listings, account info and message gets by
sequence are not granted: they would reveal other namespaces' keys and consumers.

It publishes into no stream: writes and Events are requests to the hub's intake
(`clusternet.intake.<namespace>.>`, api/intake.py says why). Replies reach it on its own inbox
prefix, which no other identity may subscribe to; a bootstrap token's holder has a prefix of
its own (`registering_inbox_prefix`). Answers to the hub's requests go to its own
`clusternet.reply.<namespace>` prefix; nothing else is open to it as a reply subject.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET
from clusternet_nats.api.push import PROXY_PREFIX
from clusternet_nats.api.registration import (
    INTAKE_PREFIX,
    agent_consumer_name,
    inbox_prefix,
    registering_inbox_prefix,
    registration_subject,
    reply_prefix,
)

FOLLOWED_BUCKET = "descriptions"
"""The bucket a cluster follows with its one consumer, filtered to its namespace."""
READ_BUCKETS = (
    FOLLOWED_BUCKET,
    "descriptions-status",
    "managedclusters",
    "managedclusters-status",
    NODE_INVENTORIES_BUCKET,
)
"""Buckets whose keys in its namespace a cluster reads by direct get (the intake writes them)."""
REQUEST_PREFIXES = (PROXY_PREFIX,)
"""Requests the hub side sends to a cluster, as `<prefix>.<cluster namespace>.>`."""


@dataclass(frozen=True)
class Permissions:
    publish: list[str] = field(default_factory=list)
    subscribe: list[str] = field(default_factory=list)
    responses: bool = False
    """NATS `allow_responses`; granted to no one here: a cluster answers on its own reply prefix."""


def registering(cluster_id: str) -> Permissions:
    """A bootstrap token's holder: one registration request, and its reply on a prefix of its own."""
    return Permissions(
        publish=[registration_subject(cluster_id)], subscribe=[f"{registering_inbox_prefix(cluster_id)}.>"]
    )


def cluster(cluster_id: str, namespace: str, domain: str | None = None) -> Permissions:
    publish = []
    stream, consumer = f"KV_{FOLLOWED_BUCKET}", agent_consumer_name(namespace)
    # Over a leaf link JetStream is reached through the hub's domain (`$JS.<domain>.API`).
    for api in ("$JS.API", *([f"$JS.{domain}.API"] if domain else [])):
        publish += [f"{api}.DIRECT.GET.KV_{bucket}.$KV.{bucket}.{namespace}.>" for bucket in READ_BUCKETS]
        publish += [
            f"{api}.CONSUMER.CREATE.{stream}.{consumer}.$KV.{FOLLOWED_BUCKET}.{namespace}.>",
            f"{api}.CONSUMER.DELETE.{stream}.{consumer}",
            f"{api}.CONSUMER.MSG.NEXT.{stream}.{consumer}",
        ]
    publish += [f"{INTAKE_PREFIX}.{namespace}.>", f"{reply_prefix(namespace)}.>"]
    subscribe = [f"{inbox_prefix(cluster_id)}.>", *(f"{prefix}.{namespace}.>" for prefix in REQUEST_PREFIXES)]
    # An agent that restarted before it kept its approval asks again with its own secret (a token
    # may not name a registered id): it holds the registration subject and prefix of its id.
    return Permissions(
        publish=[*publish, *registering(cluster_id).publish], subscribe=[*subscribe, *registering(cluster_id).subscribe]
    )

"""What each identity may publish and subscribe: the isolation between clusters, in NATS terms.

A cluster reaches JetStream only through API subjects that name what they touch: consumers are
created with the filter in the subject (`CONSUMER.CREATE.<stream>.<name>.<filter>`; the server
rejects a body whose filter differs), keys are read with direct gets that carry the key in the
subject, and writes are publishes to its own keys. Consumer listing and info, which would reveal
other clusters' consumer names, are not granted; names are random, so a cluster cannot pull from
a consumer it did not create. Replies reach it on its own inbox prefix, never `_INBOX.>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET
from clusternet_nats.api.push import PROXY_PREFIX
from clusternet_nats.api.registration import inbox_prefix, registration_subject, reply_prefix

READ_BUCKETS = ("descriptions",)
"""Buckets a cluster follows with an informer, filtered to its namespace."""
WRITE_BUCKETS = ("descriptions-status", "managedclusters", "managedclusters-status", NODE_INVENTORIES_BUCKET)
"""Buckets where a cluster writes (and reads back) its own keys."""
REQUEST_PREFIXES = (PROXY_PREFIX,)
"""Requests the hub side sends to a cluster, as `<prefix>.<cluster namespace>.>`."""


@dataclass(frozen=True)
class Permissions:
    publish: list[str] = field(default_factory=list)
    subscribe: list[str] = field(default_factory=list)
    responses: bool = False
    """May answer requests it received (one reply each), whatever their reply subject."""


def registering(cluster_id: str) -> Permissions:
    """A bootstrap token's holder: one registration request, and its reply."""
    return Permissions(publish=[registration_subject(cluster_id)], subscribe=[f"{inbox_prefix(cluster_id)}.>"])


def cluster(cluster_id: str, namespace: str, domain: str | None = None) -> Permissions:
    publish = []
    # Over a leaf link JetStream is reached through the hub's domain (`$JS.<domain>.API`).
    for api in ("$JS.API", *([f"$JS.{domain}.API"] if domain else [])):
        publish.append(f"{api}.INFO")
        for bucket in (*READ_BUCKETS, *WRITE_BUCKETS):
            stream, keys = f"KV_{bucket}", f"$KV.{bucket}.{namespace}.>"
            publish += [
                f"{api}.STREAM.INFO.{stream}",
                f"{api}.DIRECT.GET.{stream}.{keys}",
                f"{api}.CONSUMER.CREATE.{stream}.*.{keys}",
                f"{api}.CONSUMER.MSG.NEXT.{stream}.*",
                f"{api}.CONSUMER.DELETE.{stream}.*",
            ]
    publish += [f"$KV.{bucket}.{namespace}.>" for bucket in WRITE_BUCKETS]
    if domain:  # behind a leaf, writes travel as `$JS.<domain>.API.$KV...` (store/kv.py)
        publish += [f"$JS.{domain}.API.$KV.{bucket}.{namespace}.>" for bucket in WRITE_BUCKETS]
    publish += [f"events.*.{namespace}.>", f"{reply_prefix(namespace)}.>"]
    subscribe = [f"{inbox_prefix(cluster_id)}.>", *(f"{prefix}.{namespace}.>" for prefix in REQUEST_PREFIXES)]
    return Permissions(publish=publish, subscribe=subscribe, responses=True)

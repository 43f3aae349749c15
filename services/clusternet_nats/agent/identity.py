"""Who a child cluster is to the hub: id, name, dedicated namespace, labels, sync mode.

Identities are derived, never stored: the id is a UUIDv5 of the name (unless given) and the
dedicated namespace a hash of the id, so a restarted agent (or N simulated ones in a process)
comes back as the same clusters, owning the same keys, with nothing to remember.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import cached_property

from clusternet_nats.api import labels as known
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.meta import validate_labels
from clusternet_nats.domain.names import dedicated_namespace

STANDARD_CLUSTER = "StandardCluster"
"""Clusternet's default --cluster-type."""

_ID_NAMESPACE = uuid.UUID("6f1c1d1e-5b0e-4a53-9a43-6c7573746e65")
"""Fixed UUIDv5 namespace for cluster ids derived from names."""


@dataclass(frozen=True)
class ClusterIdentity:
    cluster_id: str
    name: str
    sync_mode: ClusterSyncMode = ClusterSyncMode.PULL
    configured_labels: dict[str, str] = field(default_factory=dict)
    cluster_type: str = STANDARD_CLUSTER

    @cached_property
    def namespace(self) -> str:
        """The dedicated namespace on the hub holding this cluster's ManagedCluster and Descriptions
        (a hash, asked for on every write: kept once computed)."""
        return dedicated_namespace(self.cluster_id)

    @property
    def labels(self) -> dict[str, str]:
        return {**self.configured_labels, known.CLUSTER_ID: self.cluster_id, known.CLUSTER_NAME: self.name}


def id_for(name: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, name))


def parse_labels(text: str) -> dict[str, str]:
    """`k=v,k2=v2` (Clusternet's --cluster-labels) into validated labels; raises ValueError."""
    out: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"invalid label {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    validate_labels(out)
    return out


def parse_labels_cycle(text: str) -> list[dict[str, str]]:
    """`env=prod,region=a;env=staging,region=b`: one label set per entry, for cluster i mod len."""
    return [parse_labels(entry) for entry in text.split(";") if entry.strip()]


def single_cluster(
    name: str, cluster_id: str | None, labels: dict[str, str], sync_mode: ClusterSyncMode
) -> ClusterIdentity:
    return ClusterIdentity(str(uuid.UUID(cluster_id or id_for(name))), name, sync_mode, labels)


def simulated_clusters(
    prefix: str, count: int, labels: dict[str, str], cycle: list[dict[str, str]], sync_mode: ClusterSyncMode
) -> list[ClusterIdentity]:
    """`<prefix>-1` .. `<prefix>-N`; the cycle's entries go round from the first, over `labels`."""
    out = []
    for i in range(1, count + 1):
        name = f"{prefix}-{i}"
        extra = cycle[(i - 1) % len(cycle)] if cycle else {}
        out.append(ClusterIdentity(id_for(name), name, sync_mode, {**labels, **extra}))
    return out

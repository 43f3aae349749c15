"""The hub's cache of cluster statuses holds only their conditions and heartbeat times.

Cluster health and cluster init read a status's conditions, lastObservedTime and heartbeat
frequency; the rest (resources, node and pod statistics: ~6 KiB decoded per cluster) is never
read on the hub, whose budget is 50 KiB per cluster in all (docs/scale.md). One informer, shared
by both, holds this view. Whoever writes a status reads the whole of it from the store first, so
a view is never written back.
"""

from __future__ import annotations

from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import Informer


def condition_view(_key: str, data: bytes, _revision: int) -> ManagedClusterStatus:
    """A stored status reduced to what the hub reads of it."""
    status = ManagedClusterStatus.model_validate_json(data)
    return ManagedClusterStatus.model_construct(
        conditions=status.conditions,
        last_observed_time=status.last_observed_time,
        heartbeat_frequency_seconds=status.heartbeat_frequency_seconds,
    )


def cluster_conditions(ctx: ServiceContext) -> Informer[ManagedClusterStatus]:
    """The process's one informer of cluster statuses as `condition_view`s."""
    bucket = by_kind(ManagedCluster.KIND).status_bucket
    assert bucket is not None
    return ctx.informer(bucket, condition_view, shared_as=condition_view)

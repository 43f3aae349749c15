"""Clusternet's cluster lifecycle: Ready turns Unknown after three missed heartbeats.

A cluster whose agent has not reported for 3 x its `heartbeatFrequencySeconds` (9 minutes when it
never said, counted from creation when it never reported) gets Ready=Unknown and healthz, livez and
readyz false in `managedclusters-status`; a cluster whose Ready is not True gets the taint
`clusters.clusternet.io/unschedulable:NoSchedule` (value: the condition's reason), which the
scheduler's taint filter honours; when heartbeats resume the agent reports Ready=True and the
taint goes. Every taint change is an Event on the ManagedCluster. Level-triggered: reconcile
reads the latest cluster and status, so a hub restart just recomputes every deadline.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import structlog
from clusternet_nats.api import labels as known
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import ConditionStatus, Taint, TaintEffect, utcnow
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain.readiness import ready_of, unknown
from clusternet_nats.hub.clusterhealth.deadlines import Deadlines
from clusternet_nats.runtime.metrics import count_by
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore

NOT_READY_THRESHOLD = 3
"""Missed heartbeats before a cluster is Unknown (Clusternet's ClusterNotReadyThreshold)."""
DEFAULT_GRACE = timedelta(minutes=9)
"""When a cluster never said its heartbeat frequency (Clusternet's DefaultClusterMonitorGracePeriod)."""

log = structlog.get_logger(__name__)


def deadline(cluster: ManagedCluster, status: ManagedClusterStatus | None) -> datetime:
    """When the cluster is Unknown unless it reports again."""
    seen = status.last_observed_time if status else None
    since = seen or cluster.metadata.creation_timestamp or utcnow()
    frequency = status.heartbeat_frequency_seconds if status else None
    grace = timedelta(seconds=frequency * NOT_READY_THRESHOLD) if frequency else DEFAULT_GRACE
    return since + grace


def wanted_taint(status: ManagedClusterStatus | None) -> Taint | None:
    ready = ready_of(status)
    if ready is None or ready.status is ConditionStatus.TRUE:
        return None
    return Taint(key=known.UNSCHEDULABLE_TAINT, effect=TaintEffect.NO_SCHEDULE, value=ready.reason, time_added=utcnow())


def _is_ours(taint: Taint) -> bool:
    return taint.key == known.UNSCHEDULABLE_TAINT and taint.effect == TaintEffect.NO_SCHEDULE


class ClusterHealth:
    def __init__(self, ctx: ServiceContext) -> None:
        info = by_kind(ManagedCluster.KIND)
        assert info.status_bucket is not None
        self.recorder = ctx.recorder
        self.clusters = ctx.objects(ManagedCluster)
        self.statuses = ctx.records(info.status_bucket, ManagedClusterStatus)
        self.cluster_store: ObjectStore[ManagedCluster] = ObjectStore(ctx.js, info)
        self.status_store = StatusStore(ctx.js, info.status_bucket, ManagedClusterStatus)
        self.deadlines = Deadlines()
        ctx.metrics.sample("cnet_clusters", self._readiness)
        self.queue = ctx.queue("cluster-health", self.reconcile)
        self.clusters.add_handler(lambda key, _obj: self.queue.add(key))
        self.statuses.add_handler(lambda key, _status: self.queue.add(key))
        ctx.run_forever(self._fire_deadlines)

    def _readiness(self) -> dict[tuple[str, ...], float]:
        """Clusters by the status of their Ready condition (Unknown before the first), for `cnet_clusters`."""
        conditions = (ready_of(self.statuses.get(key)) for key, _ in self.clusters.items())
        return count_by(str(c.status) if c is not None else "Unknown" for c in conditions)

    async def _fire_deadlines(self) -> None:
        await self.deadlines.run(self.queue.add)

    async def reconcile(self, key: str) -> None:
        cluster = self.clusters.get(key)
        if cluster is None:
            self.deadlines.forget(key)
            return
        status = self.statuses.get(key)
        due = deadline(cluster, status)
        ready = ready_of(status)
        if datetime.now(UTC) < due:
            self.deadlines.schedule(key, due.timestamp())
        elif ready is None or ready.status is not ConditionStatus.UNKNOWN:
            status = unknown(status)
            await self.status_store.put(key, status, self.statuses.revision(key))
            log.info("clusterhealth.unknown", cluster=key, last_observed=str(due))
        await self._taint(cluster, status)

    async def _taint(self, cluster: ManagedCluster, status: ManagedClusterStatus | None) -> None:
        taint = wanted_taint(status)
        taints = cluster.spec.taints or []
        present = next((t for t in taints if _is_ours(t)), None)
        if (present.value if present else None, present is None) == (taint.value if taint else None, taint is None):
            return
        desired = cluster.model_copy(deep=True)
        kept = [t for t in taints if not _is_ours(t)]
        desired.spec.taints = ([*kept, taint] if taint else kept) or None
        await self.cluster_store.update(desired, cluster)
        name = cluster.namespaced_name()
        if taint is not None:
            log.info("clusterhealth.tainted", cluster=name, reason=taint.value)
            message = f"cluster {name} is not ready ({taint.value}): tainted {known.UNSCHEDULABLE_TAINT}:NoSchedule"
            await self.recorder.warning(cluster, "ClusterNotReady", message)
        else:
            log.info("clusterhealth.untainted", cluster=name)
            message = f"cluster {name} is ready again: removed taint {known.UNSCHEDULABLE_TAINT}:NoSchedule"
            await self.recorder.normal(cluster, "ClusterReady", message)

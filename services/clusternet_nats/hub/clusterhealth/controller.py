"""Clusternet's cluster lifecycle: Ready turns Unknown after three missed heartbeats.

A cluster whose agent has not been heard from for 3 x its `heartbeatFrequencySeconds` (9 minutes
when it never said, counted from creation when it never reported) gets Ready=Unknown and healthz,
livez and readyz false in `managedclusters-status`; a cluster whose Ready is not True gets the
taint `clusters.clusternet.io/unschedulable:NoSchedule` (value: the condition's reason), which the
scheduler's taint filter honours; when heartbeats resume the agent reports Ready=True and the
taint goes. Every taint change is an Event on the ManagedCluster.

Heard from: the later of the stored status's lastObservedTime (written when the status changes)
and the last heartbeat (api/heartbeat.py: core NATS, kept here in memory only, as Kubernetes'
node lifecycle controller keeps its probe timestamps). After a hub restart nothing of the latter
is known, so every cluster is given the grace from the controller's start: a restart neither
marks a healthy cluster Unknown nor forgets a dead one, which goes Unknown one grace later. Each
replica of the hub hears every heartbeat, so a partition that moves finds its clusters' times
already known. Deadlines are one timer (deadlines.py), not a scan of every cluster: a heartbeat
only records its time; when a cluster's deadline comes, it is pushed out to the cluster's new one
if it was heard from meanwhile, and reconciled otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from datetime import UTC, datetime, timedelta

import structlog
from clusternet_nats.api import labels as known
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.heartbeat import MAX_HEARTBEAT_BYTES, ClusterHeartbeat, HeartbeatAnswer, answer_subject
from clusternet_nats.api.meta import ConditionStatus, KubeObject, Taint, TaintEffect, utcnow
from clusternet_nats.api.registry import by_kind
from clusternet_nats.api.subjects import HEARTBEAT
from clusternet_nats.domain.readiness import ready_of, unknown
from clusternet_nats.domain.taints import add_or_update_taint, remove_taint
from clusternet_nats.hub.clusterconditions import cluster_conditions
from clusternet_nats.hub.clusterhealth.deadlines import Deadlines
from clusternet_nats.runtime.metrics import count_by
from clusternet_nats.runtime.ratelimit import RateLimiter
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore, object_key
from nats.aio.msg import Msg
from pydantic import ValidationError

NOT_READY_THRESHOLD = 3
"""Missed heartbeats before a cluster is Unknown (Clusternet's ClusterNotReadyThreshold)."""
DEFAULT_GRACE = timedelta(minutes=9)
"""When a cluster never said its heartbeat frequency (Clusternet's DefaultClusterMonitorGracePeriod)."""
_REFUSALS_LOGGED_PER_MINUTE = 5

log = structlog.get_logger(__name__)


def deadline(cluster: ManagedCluster, status: ManagedClusterStatus | None, heard: float) -> float:
    """When the cluster is Unknown unless heard from again (seconds since the epoch); `heard`: its
    last heartbeat, or the controller's start if later."""
    seen = status.last_observed_time if status else None
    since = max(seen or cluster.metadata.creation_timestamp or utcnow(), datetime.fromtimestamp(heard, UTC))
    frequency = status.heartbeat_frequency_seconds if status else None
    grace = timedelta(seconds=frequency * NOT_READY_THRESHOLD) if frequency else DEFAULT_GRACE
    return (since + grace).timestamp()


UNSCHEDULABLE = Taint(key=known.UNSCHEDULABLE_TAINT, effect=TaintEffect.NO_SCHEDULE)
"""The taint of a cluster whose Ready is not True; its value is the condition's reason."""


def wanted_taint(status: ManagedClusterStatus | None) -> Taint | None:
    """The unschedulable taint the cluster should carry, if any: without timeAdded, as
    Clusternet's (Kubernetes writes it for NoExecute taints only)."""
    ready = ready_of(status)
    if ready is None or ready.status is ConditionStatus.TRUE:
        return None
    return UNSCHEDULABLE.model_copy(update={"value": ready.reason})


class ClusterHealth:
    def __init__(self, ctx: ServiceContext) -> None:
        info = by_kind(ManagedCluster.KIND)
        assert info.status_bucket is not None
        self.recorder = ctx.recorder
        self.nc, self.partitions = ctx.nc, ctx.partitions
        self.clusters = ctx.objects(ManagedCluster)
        self.statuses = cluster_conditions(ctx)
        """Conditions and heartbeat times only (a view): a write reads the whole status first."""
        self.cluster_store: ObjectStore[ManagedCluster] = ObjectStore(ctx.js, info)
        self.status_store = StatusStore(ctx.js, info.status_bucket, ManagedClusterStatus)
        self.deadlines = Deadlines()
        self.started = time.time()
        self.heard: dict[str, float] = {}
        """Each cluster's last heartbeat (time.time()), by its key; memory only."""
        self._refusals = RateLimiter(rate=_REFUSALS_LOGGED_PER_MINUTE / 60, burst=_REFUSALS_LOGGED_PER_MINUTE)
        ctx.metrics.sample("cnet_clusters", self._readiness)
        self.queue = ctx.queue("cluster-health", self.reconcile)
        self.clusters.add_handler(lambda key, _obj: self.queue.add(key))
        self.statuses.add_handler(lambda key, _status: self.queue.add(key))
        ctx.run_forever(self._fire_deadlines)
        ctx.run_forever(self._listen)

    def _readiness(self) -> dict[tuple[str, ...], float]:
        """Clusters by the status of their Ready condition (Unknown before the first), for `cnet_clusters`."""
        conditions = (ready_of(self.statuses.get(key)) for key, _ in self.clusters.items())
        return count_by(str(c.status) if c is not None else "Unknown" for c in conditions)

    def _heard(self, key: str) -> float:
        return max(self.heard.get(key, 0.0), self.started)

    def _observed(self, key: str, status: ManagedClusterStatus) -> None:
        """lastObservedTime: the last heartbeat heard, when later than the last status write."""
        if (heard := self.heard.get(key)) is not None:
            when = datetime.fromtimestamp(heard, UTC).replace(microsecond=0)
            if status.last_observed_time is None or status.last_observed_time < when:
                status.last_observed_time = when

    def show_observed(self, obj: KubeObject) -> None:
        """What the hub's reads show of a ManagedCluster: a steady cluster writes no status (its
        heartbeats are core NATS messages), so its stored lastObservedTime is its last change; GET
        and LIST show its last heartbeat, as Clusternet's, whose every report is a write."""
        if isinstance(obj, ManagedCluster):
            self._observed(object_key(obj.metadata.namespace, obj.metadata.name or ""), obj.status)

    async def _fire_deadlines(self) -> None:
        await self.deadlines.run(self._due)

    def _due(self, key: str) -> None:
        """A deadline passed: pushed out if the cluster was heard from since, else reconciled."""
        cluster = self.clusters.get(key)
        if cluster is not None and (self.partitions is None or self.partitions.owns(key)):
            due = deadline(cluster, self.statuses.get(key), self._heard(key))
            if time.time() < due:
                self.deadlines.schedule(key, due)
                return
        self.queue.add(key)

    async def _listen(self) -> None:
        sub = await self.nc.subscribe(HEARTBEAT.filter(), cb=self._on_heartbeat)
        try:
            await asyncio.Event().wait()
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _on_heartbeat(self, msg: Msg) -> None:
        """Records when a cluster was heard from, if the heartbeat is its own; drops it otherwise
        (logged at most a few times a minute per subject's cluster id, so a flood floods no log)."""
        where = HEARTBEAT.parse(msg.subject)
        if where is None:
            return
        checked = self._check(where, msg.data)
        if isinstance(checked, str):
            if self._refusals.allow(where["cluster_id"]):
                log.warning("clusterhealth.heartbeat_refused", subject=msg.subject, reason=checked)
            return
        key, beat = checked
        self.heard[sys.intern(key)] = time.time()
        held = self.statuses.revision(key)
        stale = held == 0 or held > beat.status_revision
        owned = self.partitions is None or self.partitions.owns(key)
        if stale and owned and msg.reply == answer_subject(beat.cluster_id):
            await self.nc.publish(msg.reply, HeartbeatAnswer(status_revision=held).to_json())

    def _check(self, where: dict[str, str], data: bytes) -> tuple[str, ClusterHeartbeat] | str:
        """(cluster key, heartbeat) when it is the subject's cluster's own; else why not."""
        if len(data) > MAX_HEARTBEAT_BYTES:
            return f"over {MAX_HEARTBEAT_BYTES} bytes"
        try:
            beat = ClusterHeartbeat.model_validate_json(data)
        except ValidationError as err:
            first = err.errors()[0]
            return f"invalid: {'.'.join(str(part) for part in first['loc']) or '(root)'}: {first['msg']}"
        if beat.cluster_id != where["cluster_id"]:
            return "clusterId is not the subject's"
        key = object_key(where["namespace"], beat.name)
        cluster = self.clusters.get(key)
        if cluster is None:
            return f"no ManagedCluster {key}"
        if cluster.spec.cluster_id != beat.cluster_id:
            return f"ManagedCluster {key} has another spec.clusterId"
        return key, beat

    async def reconcile(self, key: str) -> None:
        cluster = self.clusters.get(key)
        if cluster is None:
            self.deadlines.forget(key)
            self.heard.pop(key, None)
            return
        status = self.statuses.get(key)
        heard = self._heard(key)
        due = deadline(cluster, status, heard)
        ready = ready_of(status)
        if time.time() < due:
            self.deadlines.schedule(key, due)
        elif ready is None or ready.status is not ConditionStatus.UNKNOWN:
            stored = await self.status_store.get(key)
            status = unknown(stored.value if stored else None)
            self._observed(key, status)  # when it was last heard from, not when its status last changed
            await self.status_store.put(key, status, stored.revision if stored else 0)
            log.info("clusterhealth.unknown", cluster=key, last_heard=str(datetime.fromtimestamp(heard, UTC)))
        await self._taint(cluster, status)

    async def _taint(self, cluster: ManagedCluster, status: ManagedClusterStatus | None) -> None:
        taint = wanted_taint(status)
        taints = cluster.spec.taints or []
        # Clusternet's AddOrUpdateTaint and RemoveTaint: a new reason replaces the value in place.
        new, changed = add_or_update_taint(taints, taint) if taint else remove_taint(taints, UNSCHEDULABLE)
        if not changed:
            return
        desired = cluster.model_copy(deep=True)
        desired.spec.taints = new or None
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

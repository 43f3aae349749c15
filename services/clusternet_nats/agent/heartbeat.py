"""The cluster's presence on the hub: its ManagedCluster, its status when it changes, and liveness.

Without registration (the development mode) the agent creates its own ManagedCluster; in
registration mode the hub's registrar created it, and the agent finds it up to date. Either way it
merges its identity into whatever is there, so taints or labels others added survive, and writes
nothing when nothing changed. Every `--cluster-status-update-frequency` (Clusternet's default: 3
minutes) it takes the last collection (see collector.py), keeps the ManagedCluster's aggregated
node labels in step and writes the node inventory when it changed. Liveness is apart from status,
as Kubernetes' node Lease is from the node status: the status goes to `managedclusters-status` only
when its content changed (lastObservedTime and the Ready condition's times aside), and otherwise
the heartbeat is a core NATS message on the cluster's own subject (api/heartbeat.py), so a steady
fleet stores nothing. The hub's cluster-health controller marks a cluster Unknown after three
missed heartbeats; when it did, or anything else replaced the status this agent wrote, the hub
answers the next heartbeat and the agent writes its status again. As Clusternet's status manager,
it remembers what it last wrote (status revision, labels) and reads again only on a conflict or
such an answer; a status that already says what it would write (another writer only added its own
condition, or a restarted agent finds its last report) is taken as written, not written again. A
new cluster reads nothing back: its ManagedCluster is the one the registrar's answer carried, its
node labels are aggregated onto that copy, its first report builds on the status the registrar
created with it, and its node inventory is created unread (a restarted agent's creates conflict,
and it builds on the record the refusal carries): in a registration storm every read is a request
to the hub's intake, and nearly every cluster is new. A failed round is retried sooner than a
period, after a wait drawn with full jitter from a window that starts at a second and doubles up to
30 s (store/backoff.py): the thousands of clusters of a fleet that failed together (a hub restart,
a store outage) do not retry together.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from clusternet_nats.agent.collector import Collected, StatusCollector
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterSpec, ManagedClusterStatus
from clusternet_nats.api.heartbeat import ClusterHeartbeat, HeartbeatAnswer, answer_subject, heartbeat_subject
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.api.meta import set_condition, utcnow
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain.readiness import ready_condition
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ConflictError, ObjectStore, StatusStore, Versioned
from clusternet_nats.store.backoff import Backoff
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import ValidationError

DEFAULT_REPORT_FREQUENCY = 180.0
_RETRY_SECONDS = 1.0
"""The first window a failed round is retried in; it doubles, with full jitter, up to _RETRY_CAP."""
_RETRY_CAP = 30.0
"""The largest window (or the period, if shorter): a cluster that failed while the hub was busy
is back within half a minute of it recovering, at most 10,000 / 30 s rounds a second."""

log = structlog.get_logger(__name__)


class Heartbeat:
    def __init__(
        self,
        ctx: ServiceContext,
        identity: ClusterIdentity,
        collector: StatusCollector,
        frequency: float = DEFAULT_REPORT_FREQUENCY,
        created: ManagedCluster | None = None,
        created_status: Versioned[ManagedClusterStatus] | None = None,
    ) -> None:
        info = by_kind(ManagedCluster.KIND)
        assert info.status_bucket is not None
        self.identity, self.collector, self.frequency = identity, collector, frequency
        self.clusters: ObjectStore[ManagedCluster] = ctx.object_store(ManagedCluster)
        self.statuses: StatusStore[ManagedClusterStatus] = ctx.status_store(info.status_bucket, ManagedClusterStatus)
        self.inventories: StatusStore[NodeInventory] = ctx.status_store(NODE_INVENTORIES_BUCKET, NodeInventory)
        self.key = self.clusters.key(identity.namespace, identity.name)
        self.nc = ctx.nc
        self.subject = heartbeat_subject(identity.namespace, identity.cluster_id)
        self.answers = answer_subject(identity.cluster_id)
        self.registered = False
        """True once the ManagedCluster and a first status are written: the cluster is schedulable."""
        self._inventory: NodeInventory | None = None
        self._status: Versioned[ManagedClusterStatus] | None = None
        """The status last written; None: write (again) at the next report."""
        self._reported: ManagedClusterStatus | None = None
        """The collection it was written from: an equal collection sends only a heartbeat."""
        self._rewrite = asyncio.Event()
        self._labels: dict[str, str] | None = None
        self._first = True
        """No round yet: the status and inventory are created, not read first."""
        self._registered_as: ManagedCluster | None = None
        """The ManagedCluster as `register` left it, for the round right after it only."""
        self._created = created
        """As the hub's registrar created it in answer to this agent: the first `register` builds
        on it instead of reading it (a stale copy loses its compare-and-set, and reads then)."""
        self._created_status = created_status
        """The first status the registrar created with it (its ClusterInit condition): the first
        round builds on it instead of creating the status unread."""
        self._log = log.bind(cluster=identity.name)

    async def run(self) -> None:
        answers: Subscription | None = None
        retry = Backoff(base=min(self.frequency, _RETRY_SECONDS), cap=min(self.frequency, _RETRY_CAP))
        try:
            while True:
                self._rewrite.clear()  # an answer arriving during the round asks for another
                try:
                    if answers is None:
                        answers = await self.nc.subscribe(self.answers, cb=self._on_answer)
                    if not self.registered:
                        await self.register()
                    await self.report()
                    self.registered = True
                    retry.reset()
                    delay = self.frequency
                except Exception as err:
                    delay = retry.next_delay()
                    self._log.warning("heartbeat.failed", error=repr(err), retry_in=round(delay, 2))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._rewrite.wait()
        finally:
            if answers is not None:
                with contextlib.suppress(Exception):
                    await answers.unsubscribe()

    async def _on_answer(self, msg: Msg) -> None:
        """The hub holds a status other than the one written last: write it again, now."""
        if not msg.data:
            return  # the server's "no responders" status: no hub is listening (yet)
        try:
            answer = HeartbeatAnswer.model_validate_json(msg.data)
        except ValidationError as err:
            field = ".".join(str(p) for p in err.errors()[0]["loc"]) or "(root)"
            self._log.warning("heartbeat.answer_invalid", field=field, error=err.errors()[0]["msg"])
            return
        written = self._status
        if written is not None and answer.status_revision == written.revision:
            return  # an answer to a heartbeat sent before our last write
        self._log.info("heartbeat.status_replaced", hub_revision=answer.status_revision)
        self._status = None
        self._rewrite.set()

    async def register(self) -> None:
        """Creates or updates this cluster's ManagedCluster; writes nothing if it is up to date."""
        ident = self.identity
        current, self._created = self._created, None
        current = current or await self.clusters.get(ident.namespace, ident.name)
        if current is not None and _says(current, ident):
            # What the registrar created, in a storm of thousands: no deep copy to compare.
            self._registered_as = current
            return
        spec = ManagedClusterSpec(cluster_id=ident.cluster_id, sync_mode=ident.sync_mode)
        desired = (
            current.model_copy(deep=True) if current else ManagedCluster.new(ident.name, ident.namespace, spec=spec)
        )
        desired.labels.update(ident.labels)
        desired.spec.cluster_id, desired.spec.sync_mode = ident.cluster_id, ident.sync_mode
        desired.spec.cluster_type = ident.cluster_type
        if current is None:
            self._registered_as = await self.clusters.create(desired)
            self._log.info("heartbeat.registered", namespace=ident.namespace, cluster_id=ident.cluster_id)
        else:
            self._registered_as = await self.clusters.update(desired, current)

    async def report(self) -> None:
        collected = await self.collector.current()
        if collected.labels != self._labels:
            await self._sync_labels(collected)
        if self._status is not None and collected.status == self._reported:
            beat = ClusterHeartbeat(
                cluster_id=self.identity.cluster_id, name=self.identity.name, status_revision=self._status.revision
            )
            await self.nc.publish(self.subject, beat.to_json(), reply=self.answers)
        else:
            # A new cluster's first status builds on the registrar's, or is created unread.
            stored = self._status or (self._created_status if self._first else await self.statuses.get(self.key))
            try:
                await self._write_status(collected, stored)
            except ConflictError as conflict:
                # Someone else wrote (the hub's ClusterInit condition on a new cluster, the hub
                # marking us Unknown), or a restarted agent finds its last report: build on what
                # is there now, which the hub's refusal carries.
                await self._write_status(collected, await self.statuses.lost_to(self.key, conflict))
        first, self._first, self._created_status = self._first, False, None
        await self._write_inventory(collected, first)

    async def _write_status(self, collected: Collected, current: Versioned[ManagedClusterStatus] | None) -> None:
        status = collected.status.model_copy(deep=True)
        status.last_observed_time = utcnow()
        old = (current.value.conditions or []) if current else []
        status.conditions = set_condition(old, ready_condition(status))
        if current is not None and _same_report(status, current.value):
            # Another writer only added its own condition (the hub's ClusterInit), or this agent
            # wrote it before a restart: it is ours to heartbeat on, not to write again.
            self._status, self._reported = current, collected.status
            return
        self._status = None
        revision = await self.statuses.put(self.key, status, current.revision if current else 0)
        self._status, self._reported = Versioned(status, revision), collected.status

    async def _sync_labels(self, collected: Collected) -> None:
        """Replaces the ManagedCluster's aggregated node labels with the latest common ones; a copy
        that lost its compare-and-set (the hub changed the cluster meanwhile) is replaced once by
        the version it lost to, which the hub's refusal carries."""
        ident = self.identity
        current, self._registered_as = self._registered_as, None
        try:
            await self._aggregate_labels(current or await self.clusters.get(ident.namespace, ident.name), collected)
        except ConflictError as conflict:
            await self._aggregate_labels(await self.clusters.lost_to(ident.namespace, ident.name, conflict), collected)
        self._labels = collected.labels

    async def _aggregate_labels(self, current: ManagedCluster | None, collected: Collected) -> None:
        if current is None:
            return
        aggregation = self.collector.aggregation
        labels = {k: v for k, v in current.labels.items() if not aggregation.owns(k)} | collected.labels
        if labels == current.labels:
            return
        desired = current.model_copy(deep=True)
        desired.metadata.labels = labels
        await self.clusters.update(desired, current)
        self._log.info("heartbeat.labels_aggregated", labels=collected.labels)

    async def _write_inventory(self, collected: Collected, first: bool = False) -> None:
        """Writes the node inventory if it changed; on the `first` round by creating it (a
        restarted agent's create conflicts, and it compares with what is stored)."""
        inventory = NodeInventory(cluster_id=self.identity.cluster_id, nodes=collected.nodes)
        if inventory == self._inventory:
            return
        if first:
            await self.inventories.create_or_replace(self.key, inventory)
        else:
            await self.inventories.put_if_changed(self.key, inventory)
        self._inventory = inventory


def _says(cluster: ManagedCluster, ident: ClusterIdentity) -> bool:
    """Whether the stored ManagedCluster already holds what `register` would write."""
    spec, labels = cluster.spec, cluster.metadata.labels or {}
    return (spec.cluster_id, spec.sync_mode, spec.cluster_type) == (
        ident.cluster_id,
        ident.sync_mode,
        ident.cluster_type,
    ) and all(labels.get(key) == value for key, value in ident.labels.items())


def _same_report(wanted: ManagedClusterStatus, stored: ManagedClusterStatus) -> bool:
    """Equal but for lastObservedTime (heartbeats carry it) and the order of the conditions."""

    def comparable(status: ManagedClusterStatus) -> ManagedClusterStatus:
        conditions = sorted(status.conditions or [], key=lambda c: c.type)
        return status.model_copy(update={"last_observed_time": None, "conditions": conditions})

    return comparable(wanted) == comparable(stored)

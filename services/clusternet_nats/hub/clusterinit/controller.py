"""Clusternet's ClusterInit, the part of its cluster lifecycle controller that initialises clusters.

Per ManagedCluster, level-triggered: record the init Base in `spec.clusterInitBaseName` (once:
Clusternet never changes it afterwards), compute the ClusterInit condition from that Base's
Descriptions (domain/clusterinit.py), write it into `managedclusters-status` beside the agent's
Ready condition, and make the `clusters.clusternet.io/initialization:NoSchedule` taint follow it.
The taint is what keeps every Subscription that does not tolerate it off the cluster (the
scheduler's TaintToleration filter); the init Subscription tolerates it, so its Base is the
first thing there. Reconciled when the cluster, its status, a Base, Description or Description
status in its namespace, or a default-init Subscription changes; nothing polls.

With the gate off it writes ClusterInit=True (ClusterInitDisabled) and lifts any init taint, as
Clusternet does. Departure: once Done, a cluster stays Done, even if its init Base is deleted
later (Clusternet recomputes and re-taints every initialised cluster when the init Subscription
goes, which stops all scheduling to them for a reason nobody asked for).
"""

from __future__ import annotations

import structlog
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Base, Description, DescriptionStatus, Subscription
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import Condition, set_condition
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain import clusterinit as init
from clusternet_nats.domain.taints import add_or_update_taint, remove_taint
from clusternet_nats.hub.clusterconditions import cluster_conditions
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import AlreadyExistsError, Versioned, object_key, split_key
from clusternet_nats.store.index import Index

log = structlog.get_logger(__name__)


def _namespace_of(key: str) -> str:
    return split_key(key, namespaced=True)[0]


def _base_uids(description: Description) -> set[str]:
    labels = description.metadata.labels or {}
    return {labels.get(known.CONFIG_UID, "")} if labels.get(known.CONFIG_KIND) == Base.KIND else set()


def _same(condition: Condition | None, wanted: Condition) -> bool:
    return condition is not None and (condition.status, condition.reason, condition.message) == (
        wanted.status,
        wanted.reason,
        wanted.message,
    )


class ClusterInitController:
    def __init__(self, ctx: ServiceContext, enabled: bool) -> None:
        self.enabled = enabled
        self.recorder = ctx.recorder
        status_bucket = by_kind(ManagedCluster.KIND).status_bucket
        assert status_bucket is not None
        self.clusters = ctx.objects(ManagedCluster)
        self.statuses = cluster_conditions(ctx)
        """Conditions and heartbeat times only (a view): a write reads the whole status first."""
        self.cluster_store = ctx.object_store(ManagedCluster)
        self.status_store = ctx.status_store(status_bucket, ManagedClusterStatus)
        self.queue = ctx.queue("cluster-init", self.reconcile)
        self._clusters_by_namespace: Index[ManagedCluster, str] = Index(lambda c: {c.namespace})
        self.clusters.add_handler(self._cluster_changed)
        self._conditions: dict[str, tuple[str, str | None, str | None] | None] = {}
        """The init condition each cluster's status last showed: a heartbeat leaves it alone."""
        self.statuses.add_handler(self._status_changed)
        if not enabled:
            return
        # What the condition is computed from, followed only while the gate is on.
        description_status_bucket = by_kind(Description.KIND).status_bucket
        assert description_status_bucket is not None
        self.subscriptions = ctx.objects(Subscription)
        self.bases = ctx.objects(Base)
        self.descriptions = ctx.objects(Description)
        self.description_statuses = ctx.records(description_status_bucket, DescriptionStatus)
        self._bases_by_namespace: Index[Base, str] = Index(lambda b: {b.namespace})
        self._descriptions_by_base: Index[Description, str] = Index(_base_uids)
        self._default_subscriptions: Index[Subscription, bool] = Index(
            lambda s: {True} if init.is_default_init(s.metadata.annotations) else set()
        )
        self.subscriptions.add_handler(self._subscription_changed)
        self.bases.add_handler(self._base_changed)
        self.descriptions.add_handler(self._description_changed)
        self.description_statuses.add_handler(lambda key, _status: self._namespace_changed(_namespace_of(key)))

    # -- what to reconcile -------------------------------------------------------------------

    def _cluster_changed(self, key: str, cluster: ManagedCluster | None) -> None:
        self._clusters_by_namespace.update(key, cluster)
        self.queue.add(key)

    def _status_changed(self, key: str, status: ManagedClusterStatus | None) -> None:
        """Reconciles when the init condition changed (or the status came or went); a status
        write that changed something else (every heartbeat) costs no reconcile."""
        if status is None:
            self._conditions.pop(key, None)
            self.queue.add(key)
            return
        condition = init.init_condition_of(status)
        seen = None if condition is None else (str(condition.status), condition.reason, condition.message)
        if key not in self._conditions or self._conditions[key] != seen:
            self._conditions[key] = seen
            self.queue.add(key)

    def _namespace_changed(self, namespace: str) -> None:
        for key in self._clusters_by_namespace.keys_for(namespace):
            self.queue.add(key)

    def _base_changed(self, key: str, base: Base | None) -> None:
        self._bases_by_namespace.update(key, base)
        self._namespace_changed(_namespace_of(key))

    def _description_changed(self, key: str, description: Description | None) -> None:
        self._descriptions_by_base.update(key, description)
        self._namespace_changed(_namespace_of(key))

    def _subscription_changed(self, key: str, sub: Subscription | None) -> None:
        if self._default_subscriptions.update(key, sub):
            # a default-init Subscription came, went or changed: every cluster still waiting
            for cluster_key, _cluster in self.clusters.items():
                if not init.is_done(self.statuses.get(cluster_key)):
                    self.queue.add(cluster_key)

    # -- reading -----------------------------------------------------------------------------

    def _is_default(self, base: Base) -> bool:
        """Annotated itself (Clusternet's deployer copies the annotation), or derived from an
        annotated Subscription (named by the Base's subs labels, the same uid)."""
        if init.is_default_init(base.metadata.annotations):
            return True
        labels = base.metadata.labels or {}
        namespace, name = labels.get(known.SUBS_NAMESPACE), labels.get(known.SUBS_NAME)
        sub = self.subscriptions.get(object_key(namespace, name)) if namespace and name else None
        return (
            sub is not None
            and sub.metadata.uid == labels.get(known.SUBS_UID)
            and init.is_default_init(sub.metadata.annotations)
        )

    def _default_bases(self, namespace: str) -> list[Base]:
        found = (self.bases.get(key) for key in self._bases_by_namespace.keys_for(namespace))
        return [b for b in found if b is not None and b.metadata.deletion_timestamp is None and self._is_default(b)]

    def _progress(self, namespace: str, base_name: str | None) -> init.Progress:
        base = self.bases.get(object_key(namespace, base_name)) if base_name else None
        if base is None:
            return init.Progress(None)
        found = []
        for key in self._descriptions_by_base.keys_for(base.metadata.uid or ""):
            description = self.descriptions.get(key)
            if description is not None and init.is_description_of(description, base):
                found.append((description, self.description_statuses.get(key)))
        return init.Progress(base, sorted(found, key=lambda pair: pair[0].name))

    # -- reconciling -------------------------------------------------------------------------

    async def reconcile(self, key: str) -> None:
        cluster = self.clusters.get(key)
        if cluster is None or cluster.metadata.deletion_timestamp is not None:
            return
        status = self.statuses.get(key)
        current = init.init_condition_of(status)
        # Only the spec is changed here (a write copies the metadata it sets): in a registration
        # storm every new cluster is reconciled, and a deep copy of all of it took 39 us, its spec's 11.
        desired = cluster.model_copy(update={"spec": cluster.spec.model_copy(deep=True)})
        if self.enabled and desired.spec.cluster_init_base_name is None:
            desired.spec.cluster_init_base_name = init.chosen_base(cluster, self._default_bases(cluster.namespace))
        if self.enabled and init.is_done(status) and current is not None:
            condition = current
        else:
            progress = self._progress(cluster.namespace, desired.spec.cluster_init_base_name) if self.enabled else None
            condition = init.init_condition(self.enabled, desired, progress or init.Progress(None))
        if not _same(current, condition):
            await self._write_condition(key, condition)
            log.info("clusterinit.condition", cluster=key, status=condition.status, reason=condition.reason)
        await self._update_cluster(cluster, desired, condition)

    async def _write_condition(self, key: str, condition: Condition) -> None:
        """Beside what else the status holds: read first unless no status is known, as for a new
        cluster (in a registration storm, nearly every one), whose status is created unread."""
        stored = await self.status_store.get(key) if self.statuses.revision(key) else None
        try:
            await self._put_condition(key, condition, stored)
        except AlreadyExistsError as conflict:  # the registrar's first status, or the agent's report, came first
            await self._put_condition(key, condition, await self.status_store.lost_to(key, conflict))

    async def _put_condition(
        self, key: str, condition: Condition, stored: Versioned[ManagedClusterStatus] | None
    ) -> None:
        """Unless what is stored already says it: the registrar's first status, or this
        controller's own write that its informer has not shown yet (a second reconcile)."""
        if stored is not None and _same(init.init_condition_of(stored.value), condition):
            return
        out = stored.value if stored else ManagedClusterStatus()
        out.conditions = set_condition(out.conditions or [], condition)
        await self.status_store.put(key, out, stored.revision if stored else 0)

    async def _update_cluster(self, cluster: ManagedCluster, desired: ManagedCluster, condition: Condition) -> None:
        taint = init.wanted_taint(self.enabled, condition)
        taints = cluster.spec.taints or []
        present = next((t for t in taints if init.is_init_taint(t)), None)
        # As the health controller's: a new reason replaces the value in place (domain/taints.py).
        new, changed = add_or_update_taint(taints, taint) if taint else remove_taint(taints, init.waiting_taint())
        if changed:
            desired.spec.taints = new or None
        if desired.spec == cluster.spec:
            return
        await self.cluster_store.update(desired, cluster)
        name = cluster.namespaced_name()
        if present is not None and taint is None:
            log.info("clusterinit.untainted", cluster=name)
            message = f"{condition.message}: removed taint {init.TAINT}:NoSchedule from cluster {name}"
            await self.recorder.normal(cluster, condition.reason, message)
        elif present is None and taint is not None:
            log.info("clusterinit.tainted", cluster=name, base=desired.spec.cluster_init_base_name)
            message = f"cluster {name} waits for its initialization: tainted {init.TAINT}:NoSchedule"
            await self.recorder.normal(cluster, init.WAITING, message)

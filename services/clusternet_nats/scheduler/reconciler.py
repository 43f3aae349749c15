"""Keeps each Subscription's binding equal to what the scheduler decides, re-deciding only when
something it depends on changed.

Level-triggered: reconcile(key) reads the Subscription, its FeedInventory, the ManagedClusters and
the stored binding from informer caches, decides, and writes the binding only if it differs
(compare-and-set on the cached revision; a conflict is retried by the queue). What is
re-evaluated follows Clusternet's scheduler (pkg/scheduler/scheduler.go):

* a Subscription when its spec changes, its FeedInventory changes, or its binding is lost or
  changed by someone else (our own writes echo back as no work);
* the Subscriptions that select a cluster, or are bound to it, when it joins, leaves, or its
  labels or taints change (`dependencies.py`: an index, so a cluster event costs the Subscriptions
  it concerns, not the fleet); NotReady reaches us as the `unschedulable` taint;
* Subscriptions with replicas that found no room, when a cluster they select gains or loses free
  capacity past a threshold (`capacity.py`), not on every inventory write;
* a Subscription failing over, when the deployer's status reports its replicas available.

A Dividing Subscription waits (condition `WaitingForFeedInventory`) until its FeedInventory lists
its current feeds. Replication is re-decided whenever it is re-evaluated (it only follows the
feasible clusters).
Dividing is re-divided, as Clusternet's `admit`, only when its specHash or FeedInventory changed,
plus where we go further: a bound cluster lost (failover, `failover.py`), or replicas still
unplaced. Otherwise replicas already placed stay where they are, so they do not flap. A
Subscription preempted by a higher-priority one is divided again from nothing.

The queue is ordered by spec.priority, then time, and retries errors with backoff from 1 s to
10 s, as Clusternet's scheduling queue. Events tell humans what changed: `Scheduled` for a new
binding, `FailedScheduling` (once per distinct message) when a Subscription cannot be (fully)
placed, `Preempted` to a Subscription that gave way to a higher-priority one, `FailingOver`
when a lost cluster's share moves. The `Scheduled` condition in the binding says the same to
`cnet get subs`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import structlog
from clusternet_nats.api.apps import (
    FeedInventory,
    SchedulingStrategy,
    Subscription,
    SubscriptionStatus,
)
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET
from clusternet_nats.api.meta import Condition, ConditionStatus
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.domain.subscriptions import in_cluster_order
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.scheduler.algorithm import Decision, schedule
from clusternet_nats.scheduler.capacity import CapacityTracker, Room, room_of
from clusternet_nats.scheduler.dependencies import Dependencies
from clusternet_nats.scheduler.failover import available_replicas, replacement_available, with_draining, without
from clusternet_nats.scheduler.framework import Framework
from clusternet_nats.scheduler.framework.interfaces import BoundSubscription, FeedReplicas
from clusternet_nats.scheduler.plugins.cluster_affinity import ClusterAffinity
from clusternet_nats.scheduler.profiles import Profiles
from clusternet_nats.store import BINDINGS_BUCKET, StatusStore
from clusternet_nats.store.keys import object_key, split_key
from pydantic import ValidationError

SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"
PREEMPTED = "Preempted"
FAILING_OVER = "FailingOver"

# Reasons of the `Scheduled` condition.
UNSCHEDULABLE = "Unschedulable"
PARTIALLY_SCHEDULED = "PartiallyScheduled"
WAITING_FOR_INVENTORY = "WaitingForFeedInventory"
NO_PROFILE = "NoProfile"

INITIAL_BACKOFF = 1.0
"""Clusternet's DefaultInitialBackoffDuration; the queue doubles it up to 10 s."""

SUBSCRIPTION_STATUS_BUCKET = KindInfo.of(Subscription).status_bucket or ""

log = structlog.get_logger(__name__)


class BindError(RuntimeError):
    """The bind cycle refused or failed; the queue retries with backoff."""


def inventory_matches(finv: FeedInventory, sub: Subscription) -> bool:
    """Whether the FeedInventory was made for the Subscription's current feeds (Clusternet compares them)."""
    return [feed_key(order) for order in finv.spec.feeds] == [feed_key(feed) for feed in sub.spec.feeds]


def feeds_changed(binding: SubscriptionBinding, finv: FeedInventory) -> bool:
    """Clusternet's isFeedChanged: a feed not divided yet, or placed replicas that no longer sum to
    the desired ones. Replicas kept on draining clusters are not counted."""
    placed = without(binding, binding.draining_clusters)
    if {feed_key(order) for order in finv.spec.feeds} != set(placed.replicas):
        return True
    for order in finv.spec.feeds:
        shares = placed.replicas.get(feed_key(order), [])
        if order.desired_replicas is not None and sum(shares) != order.desired_replicas:
            return True
    return False


def scheduled_condition(status: bool, reason: str, message: str, before: Condition | None) -> Condition:
    """The `Scheduled` condition, keeping its transition time while its status holds."""
    value = ConditionStatus.TRUE if status else ConditionStatus.FALSE
    since = before.last_transition_time if before is not None and before.status == value else datetime.now(UTC)
    return Condition(type=SCHEDULED, status=value, reason=reason, message=message[:32768], last_transition_time=since)


def predicted_by_feed(
    clusters: list[str], finv: FeedInventory | None, predictions: dict[str, FeedReplicas]
) -> dict[str, list[int | None]]:
    """The predictor's answers (per cluster, per feed) as status shows replicas: per feed key of a
    feed with replicas, one figure per bound cluster in bindingClusters order."""
    if finv is None or not predictions:
        return {}
    return {
        feed_key(order): [
            answer[i] if (answer := predictions.get(cluster)) is not None and i < len(answer) else None
            for cluster in clusters
        ]
        for i, order in enumerate(finv.spec.feeds)
        if order.desired_replicas is not None
    }


def shortfall(binding: SubscriptionBinding, finv: FeedInventory) -> dict[str, int]:
    """Per divided feed key, the desired replicas the binding does not place (a feed it does not
    divide, as static dividing with no weight, lacks nothing)."""
    missing = {
        feed_key(order): order.desired_replicas - sum(binding.replicas[feed_key(order)])
        for order in finv.spec.feeds
        if order.desired_replicas is not None and binding.replicas.get(feed_key(order))
    }
    return {feed: n for feed, n in missing.items() if n > 0}


def unplaced_message(unscheduled: dict[str, int]) -> str:
    parts = [f"{count} replicas of {feed}" for feed, count in sorted(unscheduled.items()) if count]
    return f"no cluster has room for {', '.join(parts)}"


def _revision_only(_key: str, _data: bytes, revision: int) -> int:
    """What the scheduler keeps of a Subscription's status: its revision, nothing decoded."""
    return revision


class SubscriptionScheduler:
    def __init__(self, ctx: ServiceContext, profiles: Profiles) -> None:
        self.profiles = profiles
        self.recorder = ctx.recorder
        self.subscriptions = ctx.objects(Subscription)
        self.clusters = ctx.objects(ManagedCluster)
        self.inventories = ctx.objects(FeedInventory)
        self.node_inventories = ctx.informer(NODE_INVENTORIES_BUCKET, room_of, shared_as=room_of)
        # Only that a status changed: it is read (large: a line per cluster) when failing over.
        self.statuses = ctx.informer(SUBSCRIPTION_STATUS_BUCKET, _revision_only, shared_as=_revision_only)
        self.status_store = StatusStore(ctx.js, SUBSCRIPTION_STATUS_BUCKET, SubscriptionStatus)
        self.bindings = ctx.records(BINDINGS_BUCKET, SubscriptionBinding)
        self.store = StatusStore(ctx.js, BINDINGS_BUCKET, SubscriptionBinding)
        self.dependencies = Dependencies()
        self.capacity = CapacityTracker()
        self._written: dict[str, SubscriptionBinding] = {}
        self._warned: dict[str, str] = {}
        self._preempted_keys: set[str] = set()
        """Subscriptions that gave way to a higher-priority one: divided again from nothing."""
        self.queue = ctx.queue(
            "scheduler", self.reconcile, on_parked=self._parked, priority=self._priority, base_delay=INITIAL_BACKOFF
        )
        self.subscriptions.add_handler(self._subscription_changed)
        self.bindings.add_handler(self._binding_changed)
        self.inventories.add_handler(lambda key, _finv: self._enqueue([key]))
        self.clusters.add_handler(self._cluster_changed)
        self.node_inventories.add_handler(self._inventory_changed)
        self.statuses.add_handler(self._status_changed)

    # -- what to re-evaluate -----------------------------------------------------------------

    def _priority(self, key: str) -> int:
        sub = self.subscriptions.get(key)
        return (sub.spec.priority or 0) if sub is not None else 0

    def _enqueue(self, keys: Iterable[str]) -> None:
        for key in keys:
            if self.subscriptions.get(key) is not None or self.bindings.get(key) is not None:
                self.queue.add(key)

    def _subscription_changed(self, key: str, sub: Subscription | None) -> None:
        self.dependencies.subscription_changed(key, sub)
        self.queue.add(key)

    def _binding_changed(self, key: str, binding: SubscriptionBinding | None) -> None:
        self.dependencies.binding_changed(key, binding)
        if binding != self._written.get(key):
            self.queue.add(key)

    def _cluster_changed(self, key: str, cluster: ManagedCluster | None) -> None:
        name = self._cluster_name(key)
        # While listing, every Subscription is being enqueued by its own informer anyway.
        self._enqueue(self.dependencies.cluster_changed(name, cluster, concerned=self.clusters.synced))

    def _inventory_changed(self, key: str, room: Room | None) -> None:
        cluster = self._cluster_name(key)
        if self.capacity.changed(cluster, room) and self.node_inventories.synced:
            self._enqueue(self.dependencies.capacity_changed(cluster))

    def _status_changed(self, key: str, _revision: int | None) -> None:
        binding = self.bindings.get(key)
        if binding is not None and binding.draining_clusters:
            self.queue.add(key)

    def _cluster(self, name: str) -> ManagedCluster | None:
        """The cluster a binding names `ns/name` (the informer's own copy, not a second map)."""
        namespace, _, cluster = name.partition("/")
        return self.clusters.get(object_key(namespace, cluster)) if cluster else None

    @staticmethod
    def _cluster_name(key: str) -> str:
        namespace, name = split_key(key, namespaced=True)
        return f"{namespace}/{name}"

    def bound_subscriptions(self) -> Iterable[BoundSubscription]:
        """The scheduler's Handle: every Subscription with its binding, for preemption."""
        for key, sub in self.subscriptions.items():
            binding = self._binding_of(key, sub)
            yield BoundSubscription(key=key, sub=sub, binding=binding, finv=self.inventories.get(key))

    # -- reconciling -------------------------------------------------------------------------

    def _binding_of(self, key: str, sub: Subscription) -> SubscriptionBinding | None:
        binding = self.bindings.get(key)
        return binding if binding is not None and binding.subscription_uid == sub.metadata.uid else None

    async def reconcile(self, key: str) -> None:
        sub = self.subscriptions.get(key)
        if sub is None:
            self._warned.pop(key, None)
            self._written.pop(key, None)
            self._preempted_keys.discard(key)
            if self.bindings.get(key) is not None:
                await self.store.bucket.delete(key, self.bindings.revision(key))
                log.info("binding.deleted", subscription=key)
            return
        stored = self._binding_of(key, sub)
        framework = self.profiles.for_subscription(sub)
        if framework is None:
            message = f"no profile named {sub.spec.scheduler_name!r} (profiles: {', '.join(self.profiles.names())})"
            await self._not_scheduled(key, sub, stored, NO_PROFILE, message)
            return
        dividing = sub.spec.scheduling_strategy == SchedulingStrategy.DIVIDING
        finv = self.inventories.get(key)
        if dividing and (finv is None or not inventory_matches(finv, sub)):
            message = f"waiting for the FeedInventory {sub.namespaced_name()} of the current feeds"
            await self._not_scheduled(key, sub, stored, WAITING_FOR_INVENTORY, message)
            return
        lost, gone = self._lost_clusters(framework, sub, stored) if dividing else (set(), set())
        # A draining cluster that is gone has nothing left to keep.
        draining = [c for c in stored.draining_clusters if self._cluster(c) is not None] if stored is not None else []
        preempted = key in self._preempted_keys
        if dividing and not preempted and not self._admit(sub, stored, finv, lost):
            return
        # A preempted Subscription keeps nothing: its replicas are placed again where room is left.
        current = without(stored, {*lost, *draining}) if stored is not None and not preempted else None
        decision = await self._schedule(framework, key, sub, finv, current)
        binding = self._with_figures(
            decision.binding, decision.failure, stored, decision.unscheduled, finv, decision.predictions
        )
        if stored is not None and (keep := sorted({*lost - gone, *draining} - set(binding.binding_clusters))):
            ids = {c: found.spec.cluster_id for c in binding.binding_clusters if (found := self._cluster(c))}
            available = available_replicas(await self._status(key))
            if not replacement_available(binding, ids, available):
                binding = with_draining(binding, stored, keep)
        # In the order the DefaultBinder writes (Clusternet's sorts in place, so its caller sees it
        # too): compared so, a decision in score order is not taken for a change of the stored one.
        binding = in_cluster_order(binding)
        changed = self.bindings.get(key) != binding
        bound = await framework.run_bind_cycle(sub, binding, self)
        if not bound.is_success:
            raise BindError(f"binding {key} not written: {bound.message}")
        self._preempted_keys.discard(key)
        await self._tell(key, sub, binding, decision.failure, changed, lost - gone)
        await self._preempted(sub, decision.preempted)

    async def _schedule(
        self,
        framework: Framework,
        key: str,
        sub: Subscription,
        finv: FeedInventory | None,
        current: SubscriptionBinding | None,
    ) -> Decision:
        """Decides over the clusters the Subscription's affinity could select (when the profile
        filters by affinity at all); again over every cluster when it cannot place everything,
        so the FailedScheduling message counts the whole fleet, as Clusternet's does."""
        everything = self.clusters.values()
        candidates = self.dependencies.candidates(key)
        if candidates is None or not any(isinstance(p, ClusterAffinity) for p in framework.plugins.filter):
            return await schedule(framework, sub, everything, finv, current)
        chosen = [cluster for name in candidates if (cluster := self._cluster(name)) is not None]
        decision = await schedule(framework, sub, chosen, finv, current)
        if decision.failure is None:
            return decision
        return await schedule(framework, sub, everything, finv, current)

    def _lost_clusters(
        self, framework: Framework, sub: Subscription, stored: SubscriptionBinding | None
    ) -> tuple[set[str], set[str]]:
        """Bound clusters (not already draining) that are gone or can no longer be scheduled to,
        and of those, the ones gone."""
        if stored is None:
            return set(), set()
        lost, gone = set(), set()
        for name in stored.binding_clusters:
            if name in stored.draining_clusters:
                continue
            cluster = self._cluster(name)
            if cluster is None or cluster.metadata.deletion_timestamp is not None:
                lost.add(name)
                gone.add(name)
            elif not framework.run_filters(sub, cluster).is_success:
                lost.add(name)
        return lost, gone

    async def _status(self, key: str) -> SubscriptionStatus | None:
        """The deployer's status of the Subscription; None (logged) when it does not decode: a
        failover then waits, as for a status not written yet."""
        try:
            found = await self.status_store.get(key)
        except ValidationError as err:
            log.warning("subscription_status.undecodable", subscription=key, error=str(err)[:300])
            return None
        return found.value if found is not None else None

    @staticmethod
    def _admit(
        sub: Subscription,
        stored: SubscriptionBinding | None,
        finv: FeedInventory | None,
        lost: set[str],
    ) -> bool:
        """Whether a Dividing Subscription is to be divided again (Clusternet's admit, and more:
        a lost cluster, a failover under way, replicas not placed)."""
        if stored is None or stored.spec_hash != spec_hash(sub.spec) or lost or stored.draining_clusters:
            return True
        if stored.unscheduled_replicas or (stored.condition is not None and stored.condition.status != "True"):
            return True
        return finv is not None and feeds_changed(stored, finv)

    @staticmethod
    def _with_figures(
        binding: SubscriptionBinding,
        failure: str | None,
        stored: SubscriptionBinding | None,
        unscheduled: dict[str, int],
        finv: FeedInventory | None,
        predictions: dict[str, FeedReplicas],
    ) -> SubscriptionBinding:
        """The decision with what users are shown: the `Scheduled` condition, unplaced replicas and
        the predictor's figures for the bound clusters."""
        before = stored.condition if stored is not None else None
        # What the binding lacks is unplaced, whether the assigner counted it or (when division
        # failed and what was placed stays) not.
        missing = shortfall(binding, finv) if finv is not None else {}
        feeds = {*unscheduled, *missing}
        unscheduled = {f: n for f in feeds if (n := max(unscheduled.get(f, 0), missing.get(f, 0)))}
        if not binding.binding_clusters:
            condition = scheduled_condition(False, UNSCHEDULABLE, failure or "no cluster is feasible", before)
        elif unscheduled or failure is not None:
            message = failure or unplaced_message(unscheduled)
            condition = scheduled_condition(False, PARTIALLY_SCHEDULED, message, before)
        else:
            count = len(binding.binding_clusters)
            condition = scheduled_condition(True, SCHEDULED, f"bound to {count} cluster(s)", before)
        return binding.model_copy(
            update={
                "condition": condition,
                "unscheduled_replicas": unscheduled,
                "predicted_replicas": predicted_by_feed(binding.binding_clusters, finv, predictions),
            }
        )

    async def write_binding(self, sub: Subscription, binding: SubscriptionBinding) -> bool:
        """The Binder the framework's Bind plugins write through."""
        return await self._write(object_key(sub.namespace, sub.name), binding)

    async def _preempted(self, sub: Subscription, victims: list[str]) -> None:
        for victim_key in victims:
            victim = self.subscriptions.get(victim_key)
            if victim is None:
                continue
            self._preempted_keys.add(victim_key)
            self.queue.add(victim_key)
            priority = sub.spec.priority or 0
            await self.recorder.normal(
                victim, PREEMPTED, f"preempted by {sub.namespaced_name()} (priority {priority}): rescheduling"
            )

    async def _write(self, key: str, binding: SubscriptionBinding) -> bool:
        if self.bindings.get(key) == binding:
            self._written[key] = binding
            return False
        revision = await self.store.put(key, binding, self.bindings.revision(key))
        self._written[key] = binding  # first: what learn tells `_binding_changed` is then ours
        # Known at once, not at its echo: a reconcile right after (another change of the same
        # Subscription) must not write it again as new, nor over a revision it has replaced.
        self.bindings.learn(key, binding, revision)
        return True

    async def _not_scheduled(
        self, key: str, sub: Subscription, stored: SubscriptionBinding | None, reason: str, message: str
    ) -> None:
        """Says why in the binding's condition, keeping the decision made for an earlier spec
        (the deployer goes on with it, as Clusternet's waits for the scheduler)."""
        base = stored or SubscriptionBinding(subscription_uid=sub.metadata.uid or "", spec_hash=0)
        before = base.condition
        binding = base.model_copy(update={"condition": scheduled_condition(False, reason, message, before)})
        written = await self._write(key, binding)
        await self._warn(key, sub, message, written)

    async def _tell(
        self,
        key: str,
        sub: Subscription,
        binding: SubscriptionBinding,
        failure: str | None,
        written: bool,
        lost: set[str],
    ) -> None:
        condition = binding.condition
        if condition is not None and condition.status != ConditionStatus.TRUE:
            await self._warn(key, sub, failure or condition.message, written)
        else:
            self._warned.pop(key, None)
        if not written:
            return
        if lost:
            await self.recorder.normal(
                sub,
                FAILING_OVER,
                f"moving the replicas of {', '.join(sorted(lost))} to other clusters; "
                f"kept there until the new placement is available",
            )
        if binding.binding_clusters:
            clusters = ",".join(binding.binding_clusters)
            draining = binding.draining_clusters
            log.info("binding.written", subscription=key, clusters=len(binding.binding_clusters), draining=draining)
            await self.recorder.normal(sub, SCHEDULED, f"Successfully bound {sub.namespaced_name()} to {clusters}")

    async def _warn(self, key: str, sub: Subscription, message: str, written: bool) -> None:
        if written or self._warned.get(key) != message:
            log.info("subscription.unschedulable", subscription=key, detail=message)
            self._warned[key] = message
            await self.recorder.warning(sub, FAILED_SCHEDULING, message)

    async def _parked(self, key: str, err: BaseException) -> None:
        sub = self.subscriptions.get(key)
        if sub is not None:
            await self.recorder.warning(sub, FAILED_SCHEDULING, f"binding not written after repeated errors: {err}")

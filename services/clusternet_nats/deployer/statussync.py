"""Each Subscription's status, kept apart from the converge, so that a Description's status costs
the share of its own cluster, not a pass over the fleet.

The converge (reconciler.py) decides which clusters are bound and which Descriptions each should
have, and hands that over (`placed`). A Description's status changing marks its cluster and
queues the Subscription here; a pass recomputes the marked clusters only (their failed-Description
warnings, the statuses of their HelmReleases, their part of the aggregate) and writes the status
if it changed, on the revision it last wrote. A rollout to 10,000 clusters brings 10,000 statuses:
the queue folds them into passes that each cost the clusters heard from since the last.

The status carries a line per bound cluster and feed (Clusternet's feedStatusDetails), megabytes
for a large fleet, and every watcher of the bucket receives each write. So after a write the
pass holds its Subscription for a time in proportion to the lines written (`PACE_PER_LINE`):
statuses heard meanwhile fold into the next write, and a fleet's rollout costs the bus about one
write a second, whatever the rate the clusters report at.

While a converge is still writing a fleet's Descriptions, their statuses already come in: the
converge tells its placement before it writes (`placed`), and passes meanwhile count what came
in but write nothing; the converge's last write (`converged`) queues the pass that writes. So the
fleet is counted as it reports, and the status lands a moment after the last cluster's, not a
whole recount later.

One queue writes the status, so passes never race on it. A replica that takes a Subscription over
knows no placement until its converge has run, and that converge queues the pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from clusternet_nats.api.apps import DeployerType, Description, Subscription, SubscriptionStatus
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.caches import Caches
from clusternet_nats.deployer.helmreleases import HelmReleases
from clusternet_nats.deployer.status import Aggregator, Release
from clusternet_nats.deployer.warnings import Warnings
from clusternet_nats.domain.descriptions import SUCCESSFULLY_DEPLOYED, failed
from clusternet_nats.domain.finalizers import is_deleting
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ConflictError, StatusStore, object_key, split_key
from clusternet_nats.store.breathe import breathe

log = structlog.get_logger(__name__)

SUBSCRIPTION_STATUS_BUCKET = KindInfo.of(Subscription).status_bucket or ""
WORKERS = 4
PACE_PER_LINE = 100e-6
"""Seconds a Subscription's status writes are apart, per line (cluster and feed) of the status:
0.1 s at 1,000 clusters and one feed, 1 s at 10,000 (some 1.3 MB a write, 4 MB with three feeds).
While a converge writes no status is written, so this spaces the writes of the statuses that come
in after it. Each write costs its writer, nats-server and every watcher a decode of the whole
status: at 10 us a line, a 10,000-cluster rollout whose statuses came in over 15 s wrote its status
27 times (`bench/rollout.py --clusters 10000`, 2026-12-03), at 100 us 4 times."""


@dataclass(frozen=True)
class Placement:
    """One bound cluster of a Subscription and the keys of the Descriptions it should have."""

    cluster_id: str
    cluster_name: str
    descriptions: tuple[str, ...]


@dataclass(frozen=True)
class Placed:
    """What a Subscription's converge last placed: its feeds, and by cluster namespace (in the
    binding's order) each bound cluster."""

    feeds: tuple[Feed, ...]
    clusters: dict[str, Placement]

    def same_as(self, other: Placed | None) -> bool:
        return (
            other is not None
            and self.feeds == other.feeds
            and list(self.clusters.items()) == list(other.clusters.items())
        )


class StatusSync:
    def __init__(self, ctx: ServiceContext, caches: Caches, helm_releases: HelmReleases, warnings: Warnings) -> None:
        self.caches = caches
        self.recorder = ctx.recorder
        self.helm_releases = helm_releases
        self.warnings = warnings
        self.store = StatusStore(ctx.js, SUBSCRIPTION_STATUS_BUCKET, SubscriptionStatus)
        self.aggregator = Aggregator()
        self._placed: dict[str, Placed] = {}
        self._whole: set[str] = set()
        """Subscriptions whose next pass aggregates every cluster (placement changed, or a pass failed)."""
        self._marked: dict[str, set[str]] = {}
        """By Subscription key: the namespaces of the clusters whose Description statuses changed."""
        self._written: dict[str, tuple[SubscriptionStatus, int]] = {}
        """By Subscription key: the status as last read or written, and its revision."""
        self._writing: set[str] = set()
        """Subscriptions whose converge is writing their Descriptions: passes count, not write."""
        self.queue = ctx.queue("deployer-status", self.sync, workers=WORKERS)

    # -- what the converge and the informers tell ----------------------------------------------

    def placed(self, sub: Subscription, clusters: Sequence[tuple[ManagedCluster, Sequence[Description]]]) -> None:
        """Before a converge writes: the bound clusters and their Descriptions, in the binding's
        order. Until `converged`, passes count the statuses that come in and write nothing."""
        key = object_key(sub.namespace, sub.name)
        placed = Placed(
            tuple(sub.spec.feeds),
            {
                cluster.namespace: Placement(
                    cluster.spec.cluster_id,
                    cluster.name,
                    tuple(object_key(d.namespace, d.name) for d in descriptions),
                )
                for cluster, descriptions in clusters
            },
        )
        self._writing.add(key)
        if placed.same_as(self._placed.get(key)) and key in self._written:
            return
        self._placed[key] = placed
        self._whole.add(key)
        self.queue.add(key)

    def converged(self, key: str) -> None:
        """The converge that told `placed` has written its Descriptions, or failed: the pass that
        writes is queued (what the converge does after its writes does not hold the status back)."""
        if key in self._writing:
            self._writing.discard(key)
            self.queue.add(key)

    def status_changed(self, sub_key: str, description_key: str) -> None:
        """A status of one of the Subscription's Descriptions was written or deleted."""
        namespace, _ = split_key(description_key, namespaced=True)
        self._marked.setdefault(sub_key, set()).add(namespace)
        self.queue.add(sub_key)

    def forget(self, key: str) -> None:
        """The Subscription is gone or going: nothing of it is kept."""
        for known in (self._placed, self._marked, self._written):
            known.pop(key, None)
        self._whole.discard(key)
        self._writing.discard(key)
        self.aggregator.forget(key)

    async def delete(self, key: str) -> None:
        """The Subscription is gone: so is its status."""
        self.forget(key)
        if await self.store.get(key) is not None:
            await self.store.delete(key)

    # -- the pass ------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        sub = self.caches.subscriptions.get(key)
        if sub is None or is_deleting(sub):
            self.forget(key)
            return
        placed = self._placed.get(key)
        if placed is None:
            return  # the converge has not placed it yet, and queues this pass when it has
        marked = self._marked.pop(key, set())
        writing = key in self._writing
        try:
            status, counted = None, False
            if key not in self._whole:
                changed = [await self._release(sub, placed.clusters[ns]) for ns in marked if ns in placed.clusters]
                if writing:  # counted only: the converge's end queues the pass that writes
                    counted = self.aggregator.absorb(key, changed)
                else:
                    status = self.aggregator.refresh(key, changed)
            if status is None and not counted:
                self._whole.discard(key)
                releases = []
                for index, placement in enumerate(placed.clusters.values()):
                    await breathe(index)
                    releases.append(await self._release(sub, placement))
                status = self.aggregator.aggregate(key, placed.feeds, releases)
            written = status is not None and not writing and await self._write(sub, key, status, len(placed.clusters))
        except BaseException:
            self._whole.add(key)  # what was marked is not lost: the retry recounts every cluster
            raise
        if written or writing:
            await asyncio.sleep(PACE_PER_LINE * len(placed.clusters) * len(placed.feeds))

    async def _release(self, sub: Subscription, placement: Placement) -> Release:
        """The cluster's Description statuses; warns of the failed ones and copies Helm releases'."""
        statuses = []
        for description_key in placement.descriptions:
            status = self.caches.description_statuses.get(description_key)
            description = self.caches.descriptions.get(description_key)
            if description is not None:
                subject = f"description {description.namespaced_name()}"
                event = failed(description, status)
                if event is not None:
                    await self.warnings.warn(sub, subject, event.reason, event.message)
                else:
                    self.warnings.resolve(sub, subject)
                if description.spec.deployer is DeployerType.HELM:
                    await self.helm_releases.sync(description, status)
            statuses.append(status)
        return Release(cluster_id=placement.cluster_id, cluster_name=placement.cluster_name, statuses=statuses)

    async def _write(self, sub: Subscription, key: str, status: SubscriptionStatus, bound: int) -> bool:
        """Writes `status` unless it is what is there, on the revision last seen (a lost
        compare-and-set forgets it: the retry reads the status afresh); whether it wrote."""
        known = self._written.get(key)
        if known is None:
            current = await self.store.get(key)
            known = (current.value, current.revision) if current is not None else None
        if known is not None and known[0] == status:
            self._written[key] = known
            return False
        try:
            revision = await self.store.put(key, status, known[1] if known is not None else 0)
        except ConflictError:
            self._written.pop(key, None)
            raise
        self._written[key] = (status, revision)
        done = status.completed_releases
        if bound and done == bound and (known is None or known[0].completed_releases != done):
            message = f"Subscription {sub.namespaced_name()} is deployed successfully to all {done} bound clusters"
            await self.recorder.normal(sub, SUCCESSFULLY_DEPLOYED, message)
        return True

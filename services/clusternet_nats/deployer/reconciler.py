"""One reconcile per Subscription keeps its Bases and their Descriptions consistent, and tells
the status pass (statussync.py) which clusters it placed.

Level-triggered: it reads the latest Subscription, binding, clusters, feeds and overrides from
the informer caches, derives what should exist and writes only the differences (CAS, so a stale
cache ends in ConflictError and a retry). It waits for the scheduler: a binding made for another
spec or another incarnation of the Subscription changes nothing. A missing feed or a bad
override leaves a cluster's Descriptions as they are (Clusternet blocks too), with a Warning.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import structlog
import structlog.contextvars
from clusternet_nats.api.apps import (
    Base,
    DeployerType,
    Description,
    HelmChart,
    Localization,
    Manifest,
    Subscription,
)
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.bases import cluster_labels, desired_base
from clusternet_nats.deployer.caches import Caches, OwnWrites
from clusternet_nats.deployer.deletion import SubscriptionDeletion
from clusternet_nats.deployer.descriptions import (
    Renderings,
    Target,
    cluster_replicas,
    description_for,
    short_replicas,
)
from clusternet_nats.deployer.helmreleases import HelmReleases
from clusternet_nats.deployer.overrides import OverrideError
from clusternet_nats.deployer.statussync import StatusSync
from clusternet_nats.deployer.warnings import Warnings
from clusternet_nats.deployer.writes import PARALLELISM, Outcome, concurrently, ensure_all, remove_all
from clusternet_nats.domain.feeds import format_feed, is_chart_feed
from clusternet_nats.domain.finalizers import is_deleting
from clusternet_nats.domain.subscriptions import scheduled
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import Informer, ObjectStore, object_key
from clusternet_nats.store.breathe import breathe

log = structlog.get_logger(__name__)

D = TypeVar("D", Base, Description)

Resolved = tuple[list[tuple[Feed, Manifest]], list[HelmChart]]
"""A Subscription's feeds resolved: the objects of its manifest feeds (in order), its charts."""


class Deployer:
    def __init__(
        self,
        ctx: ServiceContext,
        caches: Caches,
        feed_in_use_protection: bool = False,
        parallelism: int = PARALLELISM,
    ) -> None:
        self.caches = caches
        self.parallelism = parallelism
        self.deletion = SubscriptionDeletion(ctx, caches, feed_in_use_protection)
        self.recorder = ctx.recorder
        self.warnings = Warnings(ctx.recorder)
        self.bases: ObjectStore[Base] = ObjectStore(ctx.js, KindInfo.of(Base))
        self.descriptions: ObjectStore[Description] = ObjectStore(ctx.js, KindInfo.of(Description))
        self.helm_releases = HelmReleases(ctx, caches)
        self.status = StatusSync(ctx, caches, self.helm_releases, self.warnings)
        self._recording: set[asyncio.Task[None]] = set()
        """Events being recorded (`_announce`), kept so that they are not collected half-way."""
        self._placed: dict[str, dict[str, Derived]] = {}
        """By Subscription key, by cluster namespace: what the cluster's Base and Descriptions
        were last derived from, and their revisions as written."""

    async def reconcile(self, key: str) -> None:
        with structlog.contextvars.bound_contextvars(subscription=key):
            sub = self.caches.subscriptions.get(key)
            if sub is None or is_deleting(sub):
                self._placed.pop(key, None)
                self.status.forget(key)
            if sub is None:
                # Its Bases and Descriptions are orphans now, collected by the sweep.
                await self.status.delete(key)
                return
            if is_deleting(sub):
                await self.deletion.finalize(sub)
                return
            if await self.deletion.hold(sub):
                return  # nothing is derived from it before its finalizer is there
            binding = self.caches.bindings.get(key)
            if binding is None or not scheduled(binding, sub):
                log.debug("deployer.waiting_for_scheduler")
                return
            await self._deploy(sub, binding)

    async def _deploy(self, sub: Subscription, binding: SubscriptionBinding) -> None:
        await self._check_replicas(sub, binding)
        uid = sub.metadata.uid or ""
        placements = [
            (index, cluster)
            for index, entry in enumerate(binding.binding_clusters)
            if (cluster := self.caches.cluster(entry)) is not None
        ]
        # What every cluster shares is read once: the feeds (and their finalizers put on), the
        # Descriptions there are now by cluster namespace.
        resolved = await self._resolve(sub.spec.feeds)
        renderings = resolved if isinstance(resolved, Feed) else Renderings(*resolved)
        existing: dict[str, list[Description]] = defaultdict(list)
        for description in self.caches.descriptions_of(uid):
            existing[description.namespace].append(description)

        try:
            has = await self._converge(sub, binding, placements, renderings, existing)
            helm = [desc for descs in has for desc in descs if desc.spec.deployer is DeployerType.HELM]

            async def sync_helm(desc: Description) -> set[str]:
                status = self.caches.description_statuses.get(self.descriptions.key_of(desc))
                return await self.helm_releases.sync(desc, status)

            helm_kept = await concurrently(self.parallelism, [functools.partial(sync_helm, desc) for desc in helm])
            await self.helm_releases.delete_stale(uid, set().union(*helm_kept))
        finally:
            self.status.converged(object_key(sub.namespace, sub.name))

    async def _converge(
        self,
        sub: Subscription,
        binding: SubscriptionBinding,
        placements: Sequence[tuple[int, ManagedCluster]],
        renderings: Renderings | Feed,
        existing: dict[str, list[Description]],
    ) -> list[list[Description]]:
        """Writes what differs: the Base of every cluster, then the Descriptions of every
        cluster, each kind's writes in flight together; deletes what is no longer bound or
        rendered. Returns each cluster's Descriptions.

        A cluster whose inputs (`_cluster_inputs`) and cached Base and Descriptions are as they
        were last written is left alone without rendering or comparing, so a status, the echo of
        the deployer's own writes, or a change to one cluster costs next to nothing for the rest
        of the fleet."""
        key = object_key(sub.namespace, sub.name)
        shared = None if isinstance(renderings, Feed) else self._shared_inputs(sub, renderings)
        localizations: dict[str, list[Localization]] = defaultdict(list)
        for localization in self.caches.localizations.values():
            localizations[localization.namespace].append(localization)
        last = self._placed.get(key, {})
        done: dict[str, Derived] = {}
        kept: dict[int, tuple[Base, list[Description]]] = {}
        todo: list[tuple[int, ManagedCluster, int | None]] = []
        for position, (index, cluster) in enumerate(placements):
            await breathe(position)
            inputs = None
            if shared is not None:
                inputs = _cluster_inputs(shared, binding, index, cluster, localizations[cluster.namespace])
            memo = last.get(cluster.namespace)
            unchanged = self._as_derived(memo) if memo is not None and memo.inputs == inputs else None
            if memo is not None and unchanged is not None:
                kept[position] = unchanged
                done[cluster.namespace] = memo
            else:
                todo.append((position, cluster, inputs))

        bases = await self._sync_bases(key, sub, [cluster for _, cluster, _ in todo])
        globalizations = self.caches.globalizations.values()
        rendered: list[list[Description] | None] = []
        for done_count, ((position, cluster, _), base) in enumerate(zip(todo, bases, strict=True)):
            await breathe(done_count)
            target = Target(
                namespace=cluster.namespace,
                labels=cluster_labels(cluster),
                subscription=sub,
                replicas=cluster_replicas(binding, placements[position][0]),
                globalizations=globalizations,
                localizations=localizations[cluster.namespace],
            )
            rendered.append(await self._render(base, target, renderings))
        desired = [(base, desc) for base, descs in zip(bases, rendered, strict=True) for desc in descs or ()]
        # Statuses come in while a fleet's Descriptions are written: counted as they come.
        placing = {position: descs for position, (_, descs) in kept.items()}
        for (position, cluster, _), descs in zip(todo, rendered, strict=True):
            placing[position] = existing.get(cluster.namespace, []) if descs is None else descs
        self.status.placed(sub, [(cluster, placing[i]) for i, (_, cluster) in enumerate(placements)])
        written = await self._sync_descriptions(key, desired)
        # Every Description is written: the status may be written again while the rest (Events,
        # memos, deletions) goes on, so it does not land seconds after the fleet's last status.
        self.status.converged(key)
        self._announce(
            [(desc, base, "Description", outcome) for (base, _), (desc, outcome) in zip(desired, written, strict=True)]
        )
        synced = iter(desc for desc, _ in written)
        for count, ((position, cluster, inputs), base, descs) in enumerate(zip(todo, bases, rendered, strict=True)):
            await breathe(count)
            # A blocked rendering (a missing feed, a failed override) keeps what the cluster has.
            has = existing.get(cluster.namespace, []) if descs is None else [next(synced) for _ in descs]
            kept[position] = base, has
            if inputs is not None and descs is not None:
                done[cluster.namespace] = Derived.of(inputs, base, has)
        self._placed[key] = done

        placed = [kept[position] for position in range(len(placements))]
        await self._delete_unbound_bases(sub, {self.bases.key_of(base) for base, _ in placed})
        kept_descriptions = {self.descriptions.key_of(d) for _, descs in placed for d in descs}
        await self._delete_stale_descriptions(sub, kept_descriptions)
        return [descs for _, descs in placed]

    def _as_derived(self, memo: Derived) -> tuple[Base, list[Description]] | None:
        """The cluster's Base and Descriptions, if each is still at the revision written."""
        base = self.caches.bases.get(memo.base[0])
        if base is None or base.metadata.resource_version != memo.base[1]:
            return None
        descriptions = []
        for key, revision in memo.descriptions:
            description = self.caches.descriptions.get(key)
            if description is None or description.metadata.resource_version != revision:
                return None
            descriptions.append(description)
        return base, descriptions

    def _shared_inputs(self, sub: Subscription, renderings: Renderings) -> int:
        """A digest of the revisions of what every cluster's Base and Descriptions are derived
        from: the Subscription, its feeds' objects, the Globalizations."""
        return hash(
            (
                sub.metadata.uid,
                sub.metadata.resource_version,
                tuple(manifest.metadata.resource_version for _, manifest in renderings.manifests),
                tuple(chart.metadata.resource_version for chart in renderings.charts),
                tuple((g.name, g.metadata.resource_version) for g in self.caches.globalizations.values()),
            )
        )

    async def _check_replicas(self, sub: Subscription, binding: SubscriptionBinding) -> None:
        short = short_replicas(binding)
        if short:
            message = (
                f"the replicas of {', '.join(short)} for Subscription {sub.namespaced_name()} "
                "do not cover every cluster in bindingClusters"
            )
            await self.warnings.warn(sub, "scheduling", "BadSchedulingResult", message)
        else:
            self.warnings.resolve(sub, "scheduling")

    # -- Bases -----------------------------------------------------------------------------

    async def _sync_bases(self, key: str, sub: Subscription, clusters: Sequence[ManagedCluster]) -> list[Base]:
        desired = [desired_base(sub, cluster) for cluster in clusters]
        pairs = [(self.caches.bases.get(self.bases.key_of(base)), base) for base in desired]
        with self.caches.own_writes(key) as writes:
            synced = await ensure_all(self.bases, pairs)
            _learn(self.caches.bases, self.bases, synced, writes)
        self._announce([(base, sub, "Base", outcome) for base, outcome in synced])
        return [base for base, _ in synced]

    def _announce(self, changes: Sequence[tuple[Base | Description, Base | Subscription, str, Outcome]]) -> None:
        """Records an Event (on its parent) for each object created or updated, and logs them:
        each at debug (Clusternet's deployer logs each at klog's V(4)), how many at info, so a
        fleet's rollout is one line, not 20,000. The Events go out beside the reconcile, not in
        its way: recording is best-effort, and a fleet's worth of them awaited would hold the
        Descriptions and the status back by seconds."""
        announced = [change for change in changes if change[3] is not Outcome.UNCHANGED]
        for obj, _, kind, outcome in announced:
            log.debug(f"deployer.{kind.lower()}_synced", cluster=obj.namespace, name=obj.name, outcome=outcome)
        if not announced:
            return
        counted = Counter(f"{kind.lower()}_{outcome.lower()}" for _, _, kind, outcome in announced)
        log.info("deployer.synced", **counted)
        recording = asyncio.create_task(
            self.recorder.record_all(
                [
                    (
                        parent,
                        "Normal",
                        f"{kind}{outcome}",
                        f"{kind} {obj.namespaced_name()} is {outcome.lower()} successfully",
                    )
                    for obj, parent, kind, outcome in announced
                ]
            )
        )
        self._recording.add(recording)
        recording.add_done_callback(self._recording.discard)

    async def _delete_unbound_bases(self, sub: Subscription, keep: set[str]) -> None:
        unbound = [base for base in self.caches.bases_of(sub.metadata.uid or "") if self.bases.key_of(base) not in keep]
        for base in unbound:
            log.info("deployer.base_deleted", cluster=base.namespace, base=base.name)
        await remove_all(self.bases, unbound, self.parallelism)

    # -- Descriptions ----------------------------------------------------------------------

    async def _render(self, base: Base, target: Target, renderings: Renderings | Feed) -> list[Description] | None:
        """The Descriptions `base` should have in its cluster; None if blocked (`renderings` is
        the feed that does not exist, or an override fails): then the cluster keeps its own."""
        if isinstance(renderings, Feed):
            message = f"Base {base.namespaced_name()} is using a nonexistent {format_feed(renderings)}"
            await self.warnings.warn(base, "feeds", f"Nonexistent{renderings.kind}", message)
            return None
        self.warnings.resolve(base, "feeds")
        try:
            specs = renderings.render(target)
        except OverrideError as err:
            await self._override_failed(base, err)
            return None
        self.warnings.resolve(base, "overrides")
        return [description_for(base, spec) for spec in specs]

    async def _resolve(self, feeds: Sequence[Feed]) -> Resolved | Feed:
        """The objects of every feed in order, their feed finalizers put on; or the first feed
        that does not exist (then nothing is rendered, and nothing held)."""
        manifests: list[tuple[Feed, Manifest]] = []
        charts: list[HelmChart] = []
        for feed in feeds:
            if is_chart_feed(feed):
                chart = self.caches.chart_for(feed)
                if chart is None:
                    return feed
                charts.append(chart)
            else:
                objects = self.caches.manifests_for(feed)
                if not objects:
                    return feed
                manifests.extend((feed, manifest) for manifest in objects)
        # Once each, though several feeds may select one object: a second write would be stale.
        # Rendered as held (finalizers on, at the revision written), so its echo changes nothing.
        held_manifests: dict[tuple[str, str], Manifest] = {}
        for _, manifest in manifests:
            identity = (manifest.kind, manifest.namespaced_name())
            if identity not in held_manifests:
                held_manifests[identity] = await self.deletion.hold_manifest(manifest)
        held_charts: dict[str, HelmChart] = {}
        for chart in charts:
            if chart.namespaced_name() not in held_charts:
                held_charts[chart.namespaced_name()] = await self.deletion.hold_chart(chart)
        return (
            [(feed, held_manifests[(m.kind, m.namespaced_name())]) for feed, m in manifests],
            [held_charts[chart.namespaced_name()] for chart in charts],
        )

    async def _override_failed(self, base: Base, err: OverrideError) -> None:
        log.warning("deployer.override_failed", cluster=base.namespace, base=base.name, error=str(err))
        message = f"Failed to apply overrides for Base {base.namespaced_name()}: {err}"
        await self.warnings.warn(base, "overrides", "FailedApplyingOverrides", message)
        source = err.override.source
        # Keyed by the source's revision: the same content fails the same way for every Base.
        subject = f"overrides@{source.metadata.resource_version}"
        await self.warnings.warn(source, subject, "FailedApplyingOverrides", str(err))

    async def _sync_descriptions(
        self, key: str, desired: Sequence[tuple[Base, Description]]
    ) -> list[tuple[Description, Outcome]]:
        """Writes the Descriptions that differ from the cache (an unchanged one costs no write)."""
        current = [self.caches.descriptions.get(self.descriptions.key_of(desc)) for _, desc in desired]
        with self.caches.own_writes(key) as writes:
            synced = await ensure_all(self.descriptions, list(zip(current, (d for _, d in desired), strict=True)))
            _learn(self.caches.descriptions, self.descriptions, synced, writes)
        return synced

    async def _delete_stale_descriptions(self, sub: Subscription, keep: set[str]) -> None:
        owned = self.caches.descriptions_of(sub.metadata.uid or "")
        stale = [description for description in owned if self.descriptions.key_of(description) not in keep]
        for description in stale:
            log.info("deployer.description_deleted", cluster=description.namespace, description=description.name)
        await remove_all(self.descriptions, stale, self.parallelism)


def _learn(
    informer: Informer[D], store: ObjectStore[D], synced: Sequence[tuple[D, Outcome]], writes: OwnWrites
) -> None:
    """Puts what a pass wrote in the cache at once: the next pass, queued meanwhile, reads it
    there, not the state before (a fleet taken for new, created again, failed per cluster); and
    notes each write, so that its echo does not queue the Subscription again (`own_writes`)."""
    for obj, outcome in synced:
        if outcome is not Outcome.UNCHANGED:
            key = store.key_of(obj)
            writes.written[key] = obj.metadata.resource_version
            informer.learn(key, obj, int(obj.metadata.resource_version or 0))


@dataclass(frozen=True)
class Derived:
    """What one cluster's Base and Descriptions were last derived from (`_cluster_inputs`), and
    their keys and revisions as written: while both hold, the cluster is neither rendered nor
    compared again."""

    inputs: int
    base: tuple[str, str | None]
    descriptions: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, inputs: int, base: Base, descriptions: Sequence[Description]) -> Derived:
        def written(obj: Base | Description) -> tuple[str, str | None]:
            return object_key(obj.namespace, obj.name), obj.metadata.resource_version

        return cls(inputs, written(base), tuple(written(d) for d in descriptions))


def _cluster_inputs(
    shared: int, binding: SubscriptionBinding, index: int, cluster: ManagedCluster, localizations: list[Localization]
) -> int:
    """A digest of what one cluster's Base and Descriptions are derived from: what all share,
    the cluster (its labels), its replica shares, the Localizations in its namespace."""
    return hash(
        (
            shared,
            cluster.namespace,
            cluster.metadata.resource_version,
            tuple(sorted(cluster_replicas(binding, index).items())),
            tuple((o.name, o.metadata.resource_version) for o in localizations),
        )
    )

"""One reconcile per Subscription keeps its Bases, their Descriptions and its status consistent.

Level-triggered: it reads the latest Subscription, binding, clusters, feeds and overrides from
the informer caches, derives what should exist and writes only the differences (CAS, so a stale
cache ends in ConflictError and a retry). It waits for the scheduler: a binding made for another
spec or another incarnation of the Subscription changes nothing. A missing feed or a bad
override leaves a cluster's Descriptions as they are (Clusternet blocks too), with a Warning.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
import structlog.contextvars
from clusternet_nats.api.apps import (
    Base,
    DeployerType,
    Description,
    DescriptionSpec,
    HelmChart,
    Manifest,
    Subscription,
    SubscriptionStatus,
)
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.bases import cluster_labels, desired_base
from clusternet_nats.deployer.caches import Caches
from clusternet_nats.deployer.deletion import SubscriptionDeletion
from clusternet_nats.deployer.descriptions import (
    Target,
    cluster_replicas,
    description_for,
    render_generic,
    render_helm,
    short_replicas,
)
from clusternet_nats.deployer.helmreleases import HelmReleases
from clusternet_nats.deployer.overrides import OverrideError
from clusternet_nats.deployer.status import Release, aggregate
from clusternet_nats.deployer.warnings import Warnings
from clusternet_nats.deployer.writes import Outcome, ensure, remove
from clusternet_nats.domain.descriptions import SUCCESSFULLY_DEPLOYED, failed
from clusternet_nats.domain.feeds import format_feed, is_chart_feed
from clusternet_nats.domain.finalizers import is_deleting
from clusternet_nats.domain.subscriptions import scheduled
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore, object_key

log = structlog.get_logger(__name__)

SUBSCRIPTION_STATUS_BUCKET = KindInfo.of(Subscription).status_bucket or ""


class Deployer:
    def __init__(self, ctx: ServiceContext, caches: Caches, feed_in_use_protection: bool = False) -> None:
        self.caches = caches
        self.deletion = SubscriptionDeletion(ctx, caches, feed_in_use_protection)
        self.recorder = ctx.recorder
        self.warnings = Warnings(ctx.recorder)
        self.bases: ObjectStore[Base] = ObjectStore(ctx.js, KindInfo.of(Base))
        self.descriptions: ObjectStore[Description] = ObjectStore(ctx.js, KindInfo.of(Description))
        self.statuses = StatusStore(ctx.js, SUBSCRIPTION_STATUS_BUCKET, SubscriptionStatus)
        self.helm_releases = HelmReleases(ctx, caches)

    async def reconcile(self, key: str) -> None:
        with structlog.contextvars.bound_contextvars(subscription=key):
            sub = self.caches.subscriptions.get(key)
            if sub is None:
                # Its Bases and Descriptions are orphans now, collected by the sweep.
                if await self.statuses.get(key) is not None:
                    await self.statuses.delete(key)
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
        placements = [
            (index, cluster)
            for index, entry in enumerate(binding.binding_clusters)
            if (cluster := self.caches.cluster(entry)) is not None
        ]
        bases = [await self._sync_base(sub, cluster) for _, cluster in placements]
        await self._delete_unbound_bases(sub, {self.bases.key_of(base) for base in bases})

        releases: list[Release] = []
        kept: set[str] = set()
        helm_kept: set[str] = set()
        for (index, cluster), base in zip(placements, bases, strict=True):
            target = self._target(sub, cluster, cluster_replicas(binding, index))
            descriptions = await self._sync_descriptions(sub, base, target)
            kept |= {self.descriptions.key_of(desc) for desc in descriptions}
            for desc in descriptions:
                if desc.spec.deployer is DeployerType.HELM:
                    status = self.caches.description_statuses.get(self.descriptions.key_of(desc))
                    helm_kept |= await self.helm_releases.sync(desc, status)
            releases.append(await self._release(sub, cluster, descriptions))
        await self.helm_releases.delete_stale(sub.metadata.uid or "", helm_kept)
        await self._delete_stale_descriptions(sub, kept)
        await self._sync_status(sub, releases)

    def _target(self, sub: Subscription, cluster: ManagedCluster, replicas: dict[str, int]) -> Target:
        return Target(
            namespace=cluster.namespace,
            labels=cluster_labels(cluster),
            subscription=sub,
            replicas=replicas,
            globalizations=self.caches.globalizations.values(),
            localizations=self.caches.localizations.values(),
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

    async def _sync_base(self, sub: Subscription, cluster: ManagedCluster) -> Base:
        desired = desired_base(sub, cluster)
        base, outcome = await ensure(self.bases, self.caches.bases.get(self.bases.key_of(desired)), desired)
        if outcome is not Outcome.UNCHANGED:
            log.info("deployer.base_synced", cluster=base.namespace, base=base.name, outcome=outcome)
            await self.recorder.normal(
                sub, f"Base{outcome}", f"Base {base.namespaced_name()} is {outcome.lower()} successfully"
            )
        return base

    async def _delete_unbound_bases(self, sub: Subscription, keep: set[str]) -> None:
        for base in self.caches.bases_of(sub.metadata.uid or ""):
            if self.bases.key_of(base) not in keep:
                log.info("deployer.base_deleted", cluster=base.namespace, base=base.name)
                await remove(self.bases, base)

    # -- Descriptions ----------------------------------------------------------------------

    async def _sync_descriptions(self, sub: Subscription, base: Base, target: Target) -> list[Description]:
        """Renders `base` for its cluster; returns the Descriptions it has now (kept as they were if blocked)."""
        existing = [d for d in self.caches.descriptions_of(sub.metadata.uid or "") if d.namespace == base.namespace]
        feeds = await self._resolve(base)
        if feeds is None:
            return existing
        manifests, charts = feeds
        try:
            specs: list[DescriptionSpec] = []
            if manifests:
                specs.append(render_generic(manifests, target))
            if charts:
                specs.append(render_helm(charts, target))
        except OverrideError as err:
            await self._override_failed(base, err)
            return existing
        self.warnings.resolve(base, "overrides")
        return [await self._sync_description(base, description_for(base, spec)) for spec in specs]

    async def _resolve(self, base: Base) -> tuple[list[tuple[Feed, Manifest]], list[HelmChart]] | None:
        """The objects of every feed in order, or None (with a Warning) when one does not exist."""
        manifests: list[tuple[Feed, Manifest]] = []
        charts: list[HelmChart] = []
        for feed in base.spec.feeds:
            if is_chart_feed(feed):
                chart = self.caches.chart_for(feed)
                found = chart is not None
                if chart is not None:
                    await self.deletion.hold_feed(chart)
                    charts.append(chart)
            else:
                objects = self.caches.manifests_for(feed)
                found = bool(objects)
                for manifest in objects:
                    await self.deletion.hold_feed(manifest)
                manifests.extend((feed, manifest) for manifest in objects)
            if not found:
                message = f"Base {base.namespaced_name()} is using a nonexistent {format_feed(feed)}"
                await self.warnings.warn(base, "feeds", f"Nonexistent{feed.kind}", message)
                return None
        self.warnings.resolve(base, "feeds")
        return manifests, charts

    async def _override_failed(self, base: Base, err: OverrideError) -> None:
        log.warning("deployer.override_failed", cluster=base.namespace, base=base.name, error=str(err))
        message = f"Failed to apply overrides for Base {base.namespaced_name()}: {err}"
        await self.warnings.warn(base, "overrides", "FailedApplyingOverrides", message)
        source = err.override.source
        # Keyed by the source's revision: the same content fails the same way for every Base.
        subject = f"overrides@{source.metadata.resource_version}"
        await self.warnings.warn(source, subject, "FailedApplyingOverrides", str(err))

    async def _sync_description(self, base: Base, desired: Description) -> Description:
        current = self.caches.descriptions.get(self.descriptions.key_of(desired))
        description, outcome = await ensure(self.descriptions, current, desired)
        if outcome is not Outcome.UNCHANGED:
            name = description.namespaced_name()
            log.info(
                "deployer.description_synced", cluster=base.namespace, description=description.name, outcome=outcome
            )
            await self.recorder.normal(
                base, f"Description{outcome}", f"Description {name} is {outcome.lower()} successfully"
            )
        return description

    async def _delete_stale_descriptions(self, sub: Subscription, keep: set[str]) -> None:
        for description in self.caches.descriptions_of(sub.metadata.uid or ""):
            if self.descriptions.key_of(description) not in keep:
                log.info("deployer.description_deleted", cluster=description.namespace, description=description.name)
                await remove(self.descriptions, description)

    # -- status ----------------------------------------------------------------------------

    async def _release(
        self, sub: Subscription, cluster: ManagedCluster, descriptions: Sequence[Description]
    ) -> Release:
        statuses = []
        for description in descriptions:
            status = self.caches.description_statuses.get(self.descriptions.key_of(description))
            subject = f"description {description.namespaced_name()}"
            event = failed(description, status)
            if event is not None:
                await self.warnings.warn(sub, subject, event.reason, event.message)
            else:
                self.warnings.resolve(sub, subject)
            statuses.append(status)
        return Release(cluster_id=cluster.spec.cluster_id, cluster_name=cluster.name, statuses=statuses)

    async def _sync_status(self, sub: Subscription, releases: Sequence[Release]) -> None:
        key = object_key(sub.namespace, sub.name)
        status = aggregate(sub.spec.feeds, releases)
        current = await self.statuses.get(key)
        if current is not None and current.value == status:
            return
        await self.statuses.put(key, status, current.revision if current else 0)
        done = status.completed_releases
        if releases and done == len(releases) and (current is None or current.value.completed_releases != done):
            message = f"Subscription {sub.namespaced_name()} is deployed successfully to all {done} bound clusters"
            await self.recorder.normal(sub, SUCCESSFULLY_DEPLOYED, message)

"""HelmRelease objects beside each Helm Description, as Clusternet's Helm deployer keeps them.

One HelmRelease per chart of a Helm Description, in the cluster's namespace (domain.helmreleases
derives them: name, releaseName, HelmOptions, merged values), labelled with the Description
(config kind/name/namespace/uid) and its Subscription, owned by the Description; ones the
Description no longer names are deleted. The agent installs from the Description itself, and
reports each chart's release (phase, revision, notes, description) in the Description's status;
the status of each HelmRelease is copied from there, so `cnet get hr -A` shows the real release
without a second write path from the clusters (nothing new for the intake to admit).
"""

from __future__ import annotations

import structlog
from clusternet_nats.api.apps import Description, DescriptionStatus, HelmRelease, HelmReleaseStatus
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.bases import derived_metadata
from clusternet_nats.deployer.caches import Caches
from clusternet_nats.deployer.writes import Outcome, ensure, remove
from clusternet_nats.domain.helmreleases import release_status, releases_of
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore

log = structlog.get_logger(__name__)


def _labelled(release: HelmRelease, desc: Description) -> HelmRelease:
    """With the chart's labels, the Description's (its Subscription's, created-by) and config
    labels naming the Description, which owns it."""
    derived = derived_metadata(desc, {**(release.metadata.labels or {}), **(desc.metadata.labels or {})})
    update = {"labels": derived.labels, "owner_references": derived.owner_references}
    return release.model_copy(update={"metadata": release.metadata.model_copy(update=update)})


class HelmReleases:
    def __init__(self, ctx: ServiceContext, caches: Caches) -> None:
        self.caches = caches
        self.store: ObjectStore[HelmRelease] = ObjectStore(ctx.js, KindInfo.of(HelmRelease))
        self.statuses = StatusStore(ctx.js, KindInfo.of(HelmRelease).status_bucket or "", HelmReleaseStatus)

    async def sync(self, desc: Description, status: DescriptionStatus | None) -> set[str]:
        """Keeps `desc`'s HelmReleases and their statuses; returns their keys."""
        releases, failures = releases_of(desc)
        if failures:
            log.warning("deployer.helmreleases_invalid", description=desc.namespaced_name(), errors=failures)
        kept: set[str] = set()
        for chart, release in releases:
            desired = _labelled(release, desc)
            key = self.store.key_of(desired)
            stored, outcome = await ensure(self.store, self.caches.helm_releases.get(key), desired)
            if outcome is not Outcome.UNCHANGED:
                log.info("deployer.helmrelease_synced", cluster=stored.namespace, name=stored.name, outcome=outcome)
            observed = release_status(chart, status)
            # Compared with the cached status, written on its revision (CAS: a stale cache retries),
            # so a reconcile that changes nothing reads nothing from NATS.
            if observed is not None and observed != self.caches.helm_release_statuses.get(key):
                await self.statuses.put(key, observed, self.caches.helm_release_statuses.revision(key))
            kept.add(key)
        return kept

    async def delete_stale(self, sub_uid: str, keep: set[str]) -> None:
        """Deletes the Subscription's HelmReleases not in `keep` (their Description went or changed)."""
        for release in self.caches.helm_releases_of(sub_uid):
            key = self.store.key_of(release)
            if key not in keep:
                log.info("deployer.helmrelease_deleted", cluster=release.namespace, helmrelease=release.name)
                await remove(self.store, release)
                await self.statuses.delete(key)

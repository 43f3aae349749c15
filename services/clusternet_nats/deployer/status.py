"""A Subscription's status from its Descriptions' statuses, as Clusternet's aggregatestatus.

`completedReleases` counts the bound clusters whose Descriptions all succeeded; each feed gets its
per-cluster status (present in a Description's manifestStatuses = available; a HelmChart once
its release is deployed; workload replica
counters read from the observed status) and their sum. Zero counters are left out, as
Clusternet's `omitempty` leaves them out of its JSON.

`aggregate` recounts everything; an `Aggregator` gives the same status while remembering each
cluster's part (its per-feed details and counters, and the statuses they came from), so that the
pass after one Description's status changed recomputes one cluster's part (`refresh`) and sums
the rest, instead of re-reading every Description status of the fleet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from clusternet_nats.api.apps import (
    AggregatedStatus,
    DescriptionPhase,
    DescriptionStatus,
    FeedStatus,
    FeedStatusPerCluster,
    HelmChart,
    ManifestStatus,
    ReplicaStatus,
    SubscriptionStatus,
)
from clusternet_nats.api.meta import Feed
from clusternet_nats.domain.feeds import names_object
from clusternet_nats.domain.helmreleases import DEPLOYED

# Which observed-status counters Clusternet reads, per workload kind and apiVersion.
WORKLOAD_COUNTERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps/v1", "Deployment"): (
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    ),
    ("apps/v1", "StatefulSet"): (
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "currentReplicas",
        "readyReplicas",
        "availableReplicas",
    ),
    ("batch/v1", "Job"): ("active", "succeeded", "failed"),
}
_MAXED = frozenset({"observedGeneration"})
_COUNTERS = tuple(dict.fromkeys(name for names in WORKLOAD_COUNTERS.values() for name in names))


@dataclass(frozen=True)
class Release:
    """One bound cluster and the statuses of the Descriptions it should have (None: not reported)."""

    cluster_id: str
    cluster_name: str
    statuses: Sequence[DescriptionStatus | None]

    @property
    def completed(self) -> bool:
        return bool(self.statuses) and all(
            status is not None and status.phase == DescriptionPhase.SUCCESS for status in self.statuses
        )


def _replica_status(counters: dict[str, int]) -> ReplicaStatus | None:
    present = {name: value for name, value in counters.items() if value}
    return ReplicaStatus.model_validate(present) if present else None


def _counters(status: ManifestStatus) -> dict[str, int]:
    names = WORKLOAD_COUNTERS.get((status.api_version, status.kind), ())
    observed = status.observed_status or {}
    return {
        name: observed[name]
        for name in names
        if isinstance(observed.get(name), int) and not isinstance(observed[name], bool)
    }


def _available(status: ManifestStatus) -> bool:
    # A HelmChart feed is reported as its release: available once that is deployed.
    if status.kind == HelmChart.KIND:
        return (status.observed_status or {}).get("phase") == DEPLOYED
    return True


def _per_cluster(feed: Feed, release: Release) -> FeedStatusPerCluster:
    found = next(
        (
            manifest
            for status in release.statuses
            if status is not None
            for manifest in status.manifest_statuses or []
            if names_object(feed, manifest)
        ),
        None,
    )
    return FeedStatusPerCluster(
        cluster_id=release.cluster_id,
        cluster_name=release.cluster_name,
        available=found is not None and _available(found),
        replica_status=_replica_status(_counters(found)) if found is not None else None,
    )


@dataclass(frozen=True)
class _Part:
    """One bound cluster's share of a Subscription's status, and the statuses it was computed from."""

    statuses: tuple[DescriptionStatus | None, ...]
    details: tuple[FeedStatusPerCluster, ...]
    """One per feed, in the Subscription's order."""
    counters: tuple[dict[str, int], ...]
    """The replica counters of each detail, by Clusternet's JSON names."""
    completed: bool


def _part(feeds: Sequence[Feed], release: Release) -> _Part:
    details = tuple(_per_cluster(feed, release) for feed in feeds)
    counters = tuple(d.replica_status.model_dump(by_alias=True) if d.replica_status else {} for d in details)
    return _Part(tuple(release.statuses), details, counters, release.completed)


def _summary(details: Sequence[FeedStatusPerCluster], counters: Sequence[dict[str, int]]) -> FeedStatus:
    totals = dict.fromkeys(_COUNTERS, 0)
    for found in counters:
        for name in _COUNTERS:
            value = found.get(name) or 0
            totals[name] = max(totals[name], value) if name in _MAXED else totals[name] + value
    return FeedStatus(available=all(detail.available for detail in details), replica_status=_replica_status(totals))


def _combine(feeds: Sequence[Feed], parts: Sequence[_Part]) -> SubscriptionStatus:
    aggregated = []
    for index, feed in enumerate(feeds):
        details = [part.details[index] for part in parts]
        aggregated.append(
            AggregatedStatus(
                api_version=feed.api_version,
                kind=feed.kind,
                name=feed.name,
                namespace=feed.namespace,
                feed_status_summary=_summary(details, [part.counters[index] for part in parts]),
                feed_status_details=details,
            )
        )
    return SubscriptionStatus(
        completed_releases=sum(1 for part in parts if part.completed),
        aggregated_statuses=aggregated,
    )


def aggregate(feeds: Sequence[Feed], releases: Sequence[Release]) -> SubscriptionStatus:
    """The part of a Subscription's status the deployer owns, recounted from every release."""
    return _combine(feeds, [_part(feeds, release) for release in releases])


def _same(known: Sequence[DescriptionStatus | None], now: Sequence[DescriptionStatus | None]) -> bool:
    # The informer hands out the object it holds until the key changes: identity settles most.
    return len(known) == len(now) and all(a is b or a == b for a, b in zip(known, now, strict=True))


@dataclass
class Aggregator:
    """`aggregate`, per Subscription, recomputing only the clusters whose statuses changed."""

    _feeds: dict[str, tuple[Feed, ...]] = field(default_factory=dict)
    _parts: dict[str, dict[tuple[str, str], _Part]] = field(default_factory=dict)

    def aggregate(self, key: str, feeds: Sequence[Feed], releases: Sequence[Release]) -> SubscriptionStatus:
        """What `aggregate(feeds, releases)` returns; clusters not released any more are forgotten."""
        feeds = tuple(feeds)
        known = self._parts.get(key, {}) if self._feeds.get(key) == feeds else {}
        parts: dict[tuple[str, str], _Part] = {}
        for release in releases:
            cluster = (release.cluster_id, release.cluster_name)
            part = known.get(cluster)
            if part is None or not _same(part.statuses, release.statuses):
                part = _part(feeds, release)
            parts[cluster] = part
        self._feeds[key], self._parts[key] = feeds, parts
        return _combine(feeds, [parts[(release.cluster_id, release.cluster_name)] for release in releases])

    def refresh(self, key: str, changed: Sequence[Release]) -> SubscriptionStatus | None:
        """The status once only the `changed` clusters' statuses changed, the feeds and the bound
        clusters (in their order) being those of the last `aggregate`; None before any. A cluster
        not bound then is left out."""
        if not self.absorb(key, changed):
            return None
        return _combine(self._feeds[key], list(self._parts[key].values()))

    def absorb(self, key: str, changed: Sequence[Release]) -> bool:
        """`refresh` without building the status (while a converge writes, nothing is written):
        the `changed` clusters' parts are recomputed; False before any `aggregate`."""
        parts = self._parts.get(key)
        if parts is None:
            return False
        feeds = self._feeds[key]
        for release in changed:
            cluster = (release.cluster_id, release.cluster_name)
            part = parts.get(cluster)
            if part is not None and not _same(part.statuses, release.statuses):
                parts[cluster] = _part(feeds, release)
        return True

    def forget(self, key: str) -> None:
        """Drops what is remembered of a Subscription that is gone."""
        self._feeds.pop(key, None)
        self._parts.pop(key, None)

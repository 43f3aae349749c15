"""A Subscription's status from its Descriptions' statuses, as Clusternet's aggregatestatus.

`completedReleases` counts the bound clusters whose Descriptions all succeeded; each feed gets its
per-cluster status (present in a Description's manifestStatuses = available; a HelmChart once
its release is deployed; workload replica
counters read from the observed status) and their sum. Zero counters are left out, as
Clusternet's `omitempty` leaves them out of its JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


def _summary(details: Sequence[FeedStatusPerCluster]) -> FeedStatus:
    totals = dict.fromkeys(_COUNTERS, 0)
    for detail in details:
        counters = detail.replica_status.model_dump(by_alias=True) if detail.replica_status else {}
        for name in _COUNTERS:
            value = counters.get(name) or 0
            totals[name] = max(totals[name], value) if name in _MAXED else totals[name] + value
    return FeedStatus(available=all(detail.available for detail in details), replica_status=_replica_status(totals))


def aggregate(feeds: Sequence[Feed], releases: Sequence[Release]) -> SubscriptionStatus:
    """The part of a Subscription's status the deployer owns."""
    aggregated = []
    for feed in feeds:
        details = [_per_cluster(feed, release) for release in releases]
        aggregated.append(
            AggregatedStatus(
                api_version=feed.api_version,
                kind=feed.kind,
                name=feed.name,
                namespace=feed.namespace,
                feed_status_summary=_summary(details),
                feed_status_details=details,
            )
        )
    return SubscriptionStatus(
        completed_releases=sum(1 for release in releases if release.completed),
        aggregated_statuses=aggregated,
    )

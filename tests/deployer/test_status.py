"""Aggregating Description statuses into a Subscription's status, as Clusternet's aggregatestatus."""

from __future__ import annotations

from collections.abc import Mapping

from clusternet_nats.api.apps import DescriptionStatus, FeedStatusPerCluster, ReplicaStatus
from clusternet_nats.api.meta import Feed
from clusternet_nats.deployer.status import Release, aggregate

DEPLOY = Feed(api_version="apps/v1", kind="Deployment", namespace="foo", name="web")
JOB = Feed(api_version="batch/v1", kind="Job", namespace="foo", name="once")
NAMESPACE = Feed(api_version="v1", kind="Namespace", name="foo")
ID_A = "11111111-1111-4111-8111-111111111111"
ID_B = "22222222-2222-4222-8222-222222222222"


def _status(phase: str, *observed: tuple[Feed, Mapping[str, object]]) -> DescriptionStatus:
    return DescriptionStatus.model_validate(
        {
            "phase": phase,
            "manifestStatuses": [{**feed.to_json_dict(), "observedStatus": status} for feed, status in observed],
        }
    )


def test_sums_workload_counters_and_counts_clusters_whose_descriptions_all_succeeded() -> None:
    deployed_a = {
        "replicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "updatedReplicas": 2,
        "observedGeneration": 3,
    }
    deployed_b = {"replicas": 3, "readyReplicas": 1, "unavailableReplicas": 2, "observedGeneration": 5}
    releases = [
        Release(ID_A, "a", [_status("Success", (NAMESPACE, {}), (DEPLOY, deployed_a)), _status("Success")]),
        Release(ID_B, "b", [_status("Pending", (NAMESPACE, {}), (DEPLOY, deployed_b)), None]),
    ]

    status = aggregate([NAMESPACE, DEPLOY], releases)

    assert status.completed_releases == 1
    assert status.aggregated_statuses is not None
    namespace, deployment = status.aggregated_statuses
    assert (namespace.kind, namespace.name, namespace.namespace) == ("Namespace", "foo", None)
    assert namespace.feed_status_summary is not None and namespace.feed_status_summary.available is True
    assert namespace.feed_status_summary.replica_status is None
    assert deployment.feed_status_details == [
        FeedStatusPerCluster(
            cluster_id=ID_A,
            cluster_name="a",
            available=True,
            replica_status=ReplicaStatus(
                replicas=2, ready_replicas=2, available_replicas=2, updated_replicas=2, observed_generation=3
            ),
        ),
        FeedStatusPerCluster(
            cluster_id=ID_B,
            cluster_name="b",
            available=True,
            replica_status=ReplicaStatus(replicas=3, ready_replicas=1, unavailable_replicas=2, observed_generation=5),
        ),
    ]
    assert deployment.feed_status_summary is not None
    assert deployment.feed_status_summary.replica_status == ReplicaStatus(
        replicas=5,
        ready_replicas=3,
        available_replicas=2,
        updated_replicas=2,
        unavailable_replicas=2,
        observed_generation=5,  # the highest, not a sum
    )


def test_a_feed_missing_in_one_cluster_is_not_available_and_job_counters_are_read() -> None:
    releases = [
        Release(ID_A, "a", [_status("Success", (JOB, {"active": 1, "succeeded": 0, "failed": 2}))]),
        Release(ID_B, "b", []),
    ]

    status = aggregate([JOB], releases)

    assert status.completed_releases == 1
    assert status.aggregated_statuses is not None
    (job,) = status.aggregated_statuses
    assert job.feed_status_details is not None
    first, second = job.feed_status_details
    assert first.replica_status == ReplicaStatus(active=1, failed=2)  # zero counters left out
    assert (second.available, second.replica_status) == (False, None)
    assert job.feed_status_summary is not None and job.feed_status_summary.available is False

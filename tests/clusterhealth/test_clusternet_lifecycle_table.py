"""Clusternet's TestGetClusterReadyCondition table (5 cases), on the hub's cluster-health rule.

Ported from pkg/controllers/clusters/clusterlifecycle/clusterlifecycle_controller_test.go: how a
cluster's Ready condition follows its reports. Clusternet's generateClusterReadyCondition gives
no condition while the cluster was heard from within 3 x heartbeatFrequencySeconds (9 minutes
when it never said; counted from creation when it never reported), else Ready=Unknown with
ClusterStatusNeverUpdated or ClusterStatusUnknown. Ours is the controller's two steps, as
`ClusterHealth.reconcile` takes them: `deadline(...)` is when the cluster is lost unless heard
from again, and past it `domain.readiness.unknown(...)` is the status it gets. Heartbeats heard
since the last status write (memory only, ours) are none here, and the controller started long
before, so only the stored status counts, as in Clusternet's table.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import Condition
from clusternet_nats.domain.readiness import ready_of, unknown
from clusternet_nats.hub.clusterhealth.controller import deadline

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
HEARD_NOTHING = 0.0
"""No heartbeat heard, and the controller's start long past."""

NEVER = ("ClusterStatusNeverUpdated", "Clusternet agent never posted cluster status.")
STOPPED = ("ClusterStatusUnknown", "Clusternet agent stopped posting cluster status.")


def _observed_ready(cluster: ManagedCluster, now: datetime) -> Condition | None:
    """The Ready condition the hub sets at `now`; None: it leaves the cluster's own."""
    if now.timestamp() < deadline(cluster, cluster.status, HEARD_NOTHING):
        return None
    return ready_of(unknown(cluster.status))


@pytest.mark.parametrize(
    ("created_ago", "observed_ago", "frequency", "want"),
    [
        pytest.param(
            timedelta(seconds=60),
            None,
            60,
            None,
            id="new cluster with zero lastObservedTime and currentTimestamp is before CreationTimestamp + gracePeriod",
        ),
        pytest.param(
            timedelta(seconds=190),
            None,
            60,
            NEVER,
            id="new cluster with zero lastObservedTime and currentTimestamp is after CreationTimestamp + gracePeriod",
        ),
        pytest.param(
            None, timedelta(minutes=4), 60, STOPPED, id="currentTimestamp is after LastObservedTime + gracePeriod"
        ),
        pytest.param(
            None, timedelta(seconds=30), 60, None, id="currentTimestamp is before LastObservedTime + gracePeriod"
        ),
        pytest.param(None, timedelta(minutes=10), None, STOPPED, id="cluster HeartbeatFrequencySeconds is nil"),
    ],
)
def test_get_cluster_ready_condition(
    created_ago: timedelta | None, observed_ago: timedelta | None, frequency: int | None, want: tuple[str, str] | None
) -> None:
    cluster = ManagedCluster.model_validate(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": "mc",
                "namespace": "clusternet-abc",
                **({"creationTimestamp": (NOW - created_ago).isoformat()} if created_ago else {}),
            },
            "spec": {"clusterId": "5f1b7c1e-0000-4000-8000-000000000001", "syncMode": "Pull"},
        }
    )
    cluster.status = ManagedClusterStatus(
        readyz=True,
        livez=True,
        heartbeat_frequency_seconds=frequency,
        last_observed_time=NOW - observed_ago if observed_ago else None,
    )
    got = _observed_ready(cluster, NOW)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert (got.type, str(got.status), got.reason, got.message) == ("Ready", "Unknown", *want)

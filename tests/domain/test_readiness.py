"""The Ready condition the agent reports, the hub's Unknown, and what the deployer reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.meta import ConditionStatus, set_condition
from clusternet_nats.domain.readiness import is_ready, ready_condition, ready_of, unknown


@pytest.mark.parametrize(
    ("healthz", "livez", "readyz", "ready"),
    [
        (True, False, False, True),
        (False, True, True, True),
        (False, True, False, False),
        (False, False, True, False),
        (False, False, False, False),
    ],
)
def test_ready_is_livez_and_readyz_or_healthz(healthz: bool, livez: bool, readyz: bool, ready: bool) -> None:
    status = ManagedClusterStatus(healthz=healthz, livez=livez, readyz=readyz)
    condition = ready_condition(status)
    assert condition.type == "Ready"
    assert condition.reason == ("ManagedClusterReady" if ready else "ManagedClusterNotReady")
    status.conditions = set_condition([], condition)
    assert is_ready(status) is ready


def test_unknown_says_whether_the_agent_ever_reported_and_is_not_ready() -> None:
    never = unknown(None)
    assert (never.healthz, never.livez, never.readyz) == (False, False, False)
    condition = ready_of(never)
    assert condition is not None and condition.status is ConditionStatus.UNKNOWN
    assert condition.reason == "ClusterStatusNeverUpdated"
    assert not is_ready(never)

    reported = ManagedClusterStatus(healthz=True, last_observed_time=datetime(2026, 1, 1, tzinfo=UTC))
    reported.conditions = set_condition([], ready_condition(reported))
    assert is_ready(reported)
    stopped = unknown(reported)
    condition = ready_of(stopped)
    assert condition is not None and condition.reason == "ClusterStatusUnknown"
    assert [c.type for c in stopped.conditions or []] == ["Ready"], "replaced, not added"
    assert not is_ready(stopped)
    assert is_ready(reported), "the status given is not changed"


def test_no_status_or_no_condition_is_not_ready() -> None:
    assert ready_of(None) is None
    assert not is_ready(None)
    assert not is_ready(ManagedClusterStatus(healthz=True))

"""A cluster's Ready condition: how it is set, and what it says.

Three services meet on it: the agent sets it from the cluster's health probes at every heartbeat,
the hub's cluster-health controller sets it Unknown when heartbeats stop (and taints a cluster that
is not Ready), and the deployer pushes only to a Ready cluster. The reasons and messages are
Clusternet's, so `cnet describe` reads as Clusternet's does.
"""

from __future__ import annotations

from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.meta import Condition, ConditionStatus, set_condition, utcnow

READY = "Ready"


def ready_of(status: ManagedClusterStatus | None) -> Condition | None:
    """The Ready condition, if the cluster has one yet."""
    return next((c for c in (status.conditions or []) if c.type == READY), None) if status else None


def is_ready(status: ManagedClusterStatus | None) -> bool:
    ready = ready_of(status)
    return ready is not None and ready.status is ConditionStatus.TRUE


def ready_condition(status: ManagedClusterStatus) -> Condition:
    """What the agent reports from its probes: Ready when (livez and readyz) or healthz."""
    if (status.livez and status.readyz) or status.healthz:
        return Condition(
            type=READY,
            status=ConditionStatus.TRUE,
            last_transition_time=utcnow(),
            reason="ManagedClusterReady",
            message="managed cluster is ready.",
        )
    return Condition(
        type=READY,
        status=ConditionStatus.FALSE,
        last_transition_time=utcnow(),
        reason="ManagedClusterNotReady",
        message="managed cluster is not ready.",
    )


def unknown(status: ManagedClusterStatus | None) -> ManagedClusterStatus:
    """The status with Ready=Unknown and every health probe false: the agent stopped reporting."""
    never = status is None or status.last_observed_time is None
    condition = Condition(
        type=READY,
        status=ConditionStatus.UNKNOWN,
        last_transition_time=utcnow(),
        reason="ClusterStatusNeverUpdated" if never else "ClusterStatusUnknown",
        message="Clusternet agent never posted cluster status."
        if never
        else "Clusternet agent stopped posting cluster status.",
    )
    out = status.model_copy(deep=True) if status else ManagedClusterStatus()
    out.healthz = out.livez = out.readyz = False
    out.conditions = set_condition(out.conditions or [], condition)
    return out

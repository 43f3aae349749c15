"""Clusternet's ClusterInit feature gate: a new cluster is initialised by one Base before anything
else is scheduled there.

With the gate on, a cluster joins with the taint `clusters.clusternet.io/initialization:NoSchedule`
(value ClusterInitWaiting), which the scheduler's TaintToleration filter honours, so only a
Subscription tolerating it reaches the cluster. The Base that initialises the cluster is the one
in the cluster's namespace derived from a Subscription annotated
`apps.clusternet.io/is-default-cluster-init: "true"` (the latest, when there are several), or
the Base the cluster's annotation `apps.clusternet.io/cluster-init-base` names; it is recorded,
once, in the cluster's `spec.clusterInitBaseName`. The ClusterInit condition reports progress
(ClusterInitWaiting with why, then ClusterInitDone once every Description of that Base is
Success), and the taint follows the condition: present while it is not True, gone after. A
cluster annotated `clusters.clusternet.io/skip-cluster-init: "true"` is not initialised.

Reasons, messages, keys and annotations are Clusternet's (pkg/known, the cluster lifecycle
controller), so `cnet describe mcls` reads the same. Pure rules; the hub's controller
(hub/clusterinit) feeds them the cluster, its candidate Bases and their Descriptions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Base, Description, DescriptionPhase, DescriptionStatus
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import Condition, ConditionStatus, Taint, TaintEffect, utcnow

FEATURE = "ClusterInit"
"""The feature gate's name (off by default, as Clusternet's)."""
CONDITION = "ClusterInit"
"""The ManagedCluster condition type."""
TAINT = "clusters.clusternet.io/initialization"
WAITING = "ClusterInitWaiting"
DISABLED = "ClusterInitDisabled"
DONE = "ClusterInitDone"

IS_DEFAULT_ANNOTATION = "apps.clusternet.io/is-default-cluster-init"
"""On a Subscription (and the Bases derived from it): its Base initialises new clusters."""
INIT_BASE_ANNOTATION = "apps.clusternet.io/cluster-init-base"
"""On a ManagedCluster: the name of the Base (in its namespace) that initialises it."""
SKIP_ANNOTATION = "clusters.clusternet.io/skip-cluster-init"
"""On a ManagedCluster, "true": it is not initialised (no taint, condition True)."""

GATE_OFF_MESSAGE = "feature gate ClusterInit is not enabled"
SKIPPED_MESSAGE = "cluster initialization is skipped"
NO_BASE_MESSAGE = "still waiting for cluster getting initialized"
DONE_MESSAGE = "cluster has been initialized successfully"
NO_DESCRIPTIONS_MESSAGE = "no matching Descriptions are found. will retry"


def waiting_taint() -> Taint:
    """What the registration approver puts on a cluster it creates while the gate is on."""
    return Taint(key=TAINT, value=WAITING, effect=TaintEffect.NO_SCHEDULE)


def is_init_taint(taint: Taint) -> bool:
    return taint.key == TAINT and taint.effect == TaintEffect.NO_SCHEDULE


def is_default_init(annotations: Mapping[str, str] | None) -> bool:
    return (annotations or {}).get(IS_DEFAULT_ANNOTATION) == "true"


def skipped(cluster: ManagedCluster) -> bool:
    return (cluster.metadata.annotations or {}).get(SKIP_ANNOTATION) == "true"


def chosen_base(cluster: ManagedCluster, defaults: Sequence[Base]) -> str | None:
    """The Base name to record in `spec.clusterInitBaseName`: the cluster's own annotation, else
    the newest default Base of its namespace; None when skipped or there is none yet."""
    if skipped(cluster):
        return None
    named = (cluster.metadata.annotations or {}).get(INIT_BASE_ANNOTATION)
    if named is not None:
        return named
    newest = max(defaults, key=lambda b: (b.metadata.creation_timestamp or utcnow(), b.name), default=None)
    return newest.name if newest else None


def is_description_of(description: Description, base: Base) -> bool:
    """Clusternet's match: the config labels name the Base (kind, namespace, uid)."""
    labels = description.metadata.labels or {}
    return (
        labels.get(known.CONFIG_KIND) == Base.KIND
        and labels.get(known.CONFIG_NAMESPACE) == base.namespace
        and labels.get(known.CONFIG_UID) == (base.metadata.uid or "")
    )


@dataclass(frozen=True)
class Progress:
    """What the controller found for the cluster's init Base."""

    base: Base | None
    """The Base `spec.clusterInitBaseName` names, None when it does not exist (or none is named)."""
    descriptions: Sequence[tuple[Description, DescriptionStatus | None]] = ()
    """The Base's Descriptions with their reported status (None: not reported yet)."""


def _pending(description: Description, status: DescriptionStatus | None) -> str:
    if status is not None and status.reason:
        return status.reason
    phase = status.phase if status is not None and status.phase else "not reported"
    return f"Description {description.namespace}/{description.name} is {phase}"


def init_condition(enabled: bool, cluster: ManagedCluster, progress: Progress) -> Condition:
    """The ClusterInit condition Clusternet's lifecycle controller writes for `cluster`."""
    base_name = cluster.spec.cluster_init_base_name
    if not enabled:
        status, reason, message = ConditionStatus.TRUE, DISABLED, GATE_OFF_MESSAGE
    elif skipped(cluster):
        status, reason, message = ConditionStatus.TRUE, DISABLED, SKIPPED_MESSAGE
    elif base_name is None:
        status, reason, message = ConditionStatus.FALSE, WAITING, NO_BASE_MESSAGE
    elif not base_name:
        status, reason, message = ConditionStatus.FALSE, WAITING, "found empty base"
    elif progress.base is None:
        status, reason = ConditionStatus.FALSE, WAITING
        message = f"failed to get Base {cluster.namespace}/{base_name}, will retry"
    elif not progress.descriptions:
        status, reason, message = ConditionStatus.FALSE, WAITING, NO_DESCRIPTIONS_MESSAGE
    else:
        pending = [
            _pending(desc, st)
            for desc, st in progress.descriptions
            if st is None or st.phase != DescriptionPhase.SUCCESS
        ]
        if pending:
            status, reason, message = ConditionStatus.FALSE, WAITING, ", ".join(pending)
        else:
            status, reason, message = ConditionStatus.TRUE, DONE, DONE_MESSAGE
    return Condition(type=CONDITION, status=status, reason=reason, message=message, last_transition_time=utcnow())


def init_condition_of(status: ManagedClusterStatus | None) -> Condition | None:
    return next((c for c in (status.conditions or []) if c.type == CONDITION), None) if status else None


def is_done(status: ManagedClusterStatus | None) -> bool:
    """Initialised: once Done, a cluster stays so even if its init Base goes later (see the
    departure noted in hub/clusterinit)."""
    condition = init_condition_of(status)
    return condition is not None and condition.status is ConditionStatus.TRUE and condition.reason == DONE


def wanted_taint(enabled: bool, condition: Condition) -> Taint | None:
    """Clusternet's condition-to-taint map: not True (False, Unknown) taints, with the reason as
    value; with the gate off no init taint is wanted at all."""
    if not enabled or condition.status is ConditionStatus.TRUE:
        return None
    return Taint(key=TAINT, value=condition.reason, effect=TaintEffect.NO_SCHEDULE)

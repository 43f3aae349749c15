"""What `cnet get` shows for each kind: the CRDs' additionalPrinterColumns, plus a few for -o wide.

Clusternet's CRDs are the reference (`/work/shared/compat/clusternet-crds`): same headers in the
same order, and columns with a priority there appear only with `-o wide` here as in kubectl.
Subscriptions have no printer columns in Clusternet; their wide view adds what people ask
first: how they are scheduled, onto how many clusters, and how far the rollout got.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from clusternet_nats.api import KindInfo
from clusternet_nats.cli.printers import age, render_table

Object = dict[str, Any]


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Object, datetime], str]
    wide_only: bool = False


def field(*path: str) -> Callable[[Object, datetime], str]:
    """A column showing the value at a path (`spec.deployer`), empty when absent."""

    def value(obj: Object, _: datetime) -> str:
        current: Any = obj
        for part in path:
            current = current.get(part) if isinstance(current, dict) else None
        return "" if current is None else str(current)

    return value


def _ready(obj: Object, _: datetime) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((str(c.get("status", "")) for c in conditions if c.get("type") == "Ready"), "")


def _bindings(obj: Object, _: datetime) -> str:
    return str(len((obj.get("status") or {}).get("bindingClusters") or []))


def _releases(obj: Object, _: datetime) -> str:
    status = obj.get("status") or {}
    return f"{status.get('completedReleases') or 0}/{status.get('desiredReleases') or 0}"


AGE = Column("AGE", lambda obj, now: age((obj.get("metadata") or {}).get("creationTimestamp"), now))
_HELM = [
    Column("CHART", field("spec", "chart")),
    Column("VERSION", field("spec", "version")),
    Column("REPO", field("spec", "repo")),
    Column("STATUS", field("status", "phase")),
    AGE,
]

COLUMNS: dict[str, list[Column]] = {
    "Subscription": [
        AGE,
        Column("STRATEGY", field("spec", "schedulingStrategy"), wide_only=True),
        Column("BINDINGS", _bindings, wide_only=True),
        Column("COMPLETED/DESIRED", _releases, wide_only=True),
    ],
    "Description": [Column("DEPLOYER", field("spec", "deployer")), Column("STATUS", field("status", "phase")), AGE],
    "HelmChart": _HELM,
    "HelmRelease": _HELM,
    "ManagedCluster": [
        Column("CLUSTER ID", field("spec", "clusterId")),
        Column("CLUSTER TYPE", field("spec", "clusterType"), wide_only=True),
        Column("SYNC MODE", field("spec", "syncMode")),
        Column("KUBERNETES", field("status", "k8sVersion")),
        Column("STATUS", _ready),
        AGE,
        Column("AGENT VERSION", field("status", "agentVersion"), wide_only=True),
    ],
    "ClusterRegistrationRequest": [
        Column("CLUSTER ID", field("spec", "clusterId")),
        Column("STATUS", field("status", "result")),
        AGE,
    ],
}


def columns_for(kind: str, wide: bool) -> list[Column]:
    """The columns after NAME (and NAMESPACE); every kind has at least AGE."""
    return [c for c in COLUMNS.get(kind, [AGE]) if wide or not c.wide_only]


def resource_name(info: KindInfo) -> str:
    """`subscription.apps.clusternet.io`, as kubectl names a kind in its output."""
    return f"{info.singular}.{info.group}"


def object_table(
    info: KindInfo, objects: list[Object], now: datetime, *, all_namespaces: bool, wide: bool, qualified: bool
) -> str:
    """One kind's table; `qualified` prefixes names with the kind, as kubectl does for several kinds."""
    columns = columns_for(info.kind, wide)
    with_namespace = all_namespaces and info.namespaced
    headers = (["NAMESPACE"] if with_namespace else []) + ["NAME"] + [c.header for c in columns]
    rows = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        name = f"{resource_name(info)}/{meta.get('name', '')}" if qualified else str(meta.get("name", ""))
        row = ([str(meta.get("namespace", ""))] if with_namespace else []) + [name]
        rows.append(row + [c.value(obj, now) for c in columns])
    return render_table(headers, rows)

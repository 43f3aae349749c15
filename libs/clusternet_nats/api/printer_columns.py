"""The table columns of each kind, as Clusternet's CRDs declare them (additionalPrinterColumns).

One table feeds both the generated CRDs (so `kubectl get` on a parent apiserver shows them) and
`cnet get` (which evaluates the same JSONPaths), so the two can never show different columns.
Only the JSONPath forms Clusternet's columns use are evaluated: `.a.b` and `.a[?(@.k=='v')].b`.

`columns_for` adds what `cnet get` and the hub's Table answers (so `kubectl get`) show beyond the
CRDs: Subscriptions have only AGE in Clusternet's CRD, which we keep; before it come whether the
scheduler placed every replica and REASON, why the Subscription is not progressing
(`not_progressing`), and with -o wide what people ask next (the scheduler's message, strategy,
clusters, replicas that found no room, releases done): computed values a JSONPath cannot express.
Ages are rendered here (apimachinery's HumanDuration), as kube-apiserver renders date columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

ColumnType = Literal["string", "integer", "number", "boolean", "date"]
Object = dict[str, Any]

_STEP = re.compile(r"\.([A-Za-z0-9_]+)|\[\?\(@\.([A-Za-z0-9_]+)==['\"]([^'\"]*)['\"]\)\]")


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: ColumnType = "string"
    description: str | None = None
    priority: int = 0
    """Above 0: shown only with `-o wide`, as kubectl does."""

    def to_crd(self) -> dict[str, Any]:
        """The additionalPrinterColumns entry."""
        out: dict[str, Any] = {"jsonPath": self.json_path, "name": self.name, "type": self.type}
        if self.description:
            out["description"] = self.description
        if self.priority:
            out["priority"] = self.priority
        return out

    def value(self, obj: Any) -> Any:
        """The value at json_path in obj (a JSON dict), None when any step is absent."""
        current: Any = obj
        for match in _STEP.finditer(self.json_path):
            field, key, wanted = match.groups()
            if field is not None:
                current = current.get(field) if isinstance(current, dict) else None
            else:
                items = current if isinstance(current, list) else []
                current = next((i for i in items if isinstance(i, dict) and str(i.get(key)) == wanted), None)
            if current is None:
                return None
        return current


AGE = PrinterColumn("AGE", ".metadata.creationTimestamp", "date")


def _helm(what: str) -> tuple[PrinterColumn, ...]:
    return (
        PrinterColumn("CHART", ".spec.chart", description="The helm chart name"),
        PrinterColumn("VERSION", ".spec.version", description="The helm chart version"),
        PrinterColumn("REPO", ".spec.repo", description="The helm repo url"),
        PrinterColumn("STATUS", ".status.phase", description=f"The helm {what} status"),
        AGE,
    )


_CLUSTER_ID = PrinterColumn("CLUSTER ID", ".spec.clusterId", description="The unique id for the cluster")

PRINTER_COLUMNS: dict[str, tuple[PrinterColumn, ...]] = {
    "Description": (
        PrinterColumn("DEPLOYER", ".spec.deployer"),
        PrinterColumn("STATUS", ".status.phase"),
        AGE,
    ),
    "HelmChart": _helm("chart"),
    "HelmRelease": _helm("release"),
    "FeedInventory": (),
    "ManagedCluster": (
        _CLUSTER_ID,
        PrinterColumn("CLUSTER TYPE", ".spec.clusterType", description="The type of the cluster", priority=100),
        PrinterColumn("SYNC MODE", ".spec.syncMode", description="The cluster sync mode"),
        PrinterColumn("KUBERNETES", ".status.k8sVersion"),
        PrinterColumn("STATUS", ".status.conditions[?(@.type=='Ready')].status"),
        AGE,
        PrinterColumn(
            "AGENT VERSION", ".status.agentVersion", description="The version of the clusternet agent", priority=100
        ),
    ),
    "ClusterRegistrationRequest": (
        _CLUSTER_ID,
        PrinterColumn("STATUS", ".status.result", description="The status of current cluster registration request"),
        AGE,
    ),
}


def crd_columns(kind: str) -> tuple[PrinterColumn, ...]:
    """What the kind's CRD declares; Clusternet gives every kind but FeedInventory at least AGE."""
    return PRINTER_COLUMNS.get(kind, (AGE,))


def table_columns(kind: str) -> tuple[PrinterColumn, ...]:
    """What kubectl shows after NAME: the CRD's columns, or AGE alone when it declares none."""
    return crd_columns(kind) or (AGE,)


def human_duration(seconds: float) -> str:
    """apimachinery's HumanDuration: `45s`, `3m20s`, `2h`, `4d`, `2y30d`."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def age(timestamp: Any, now: datetime | None = None) -> str:
    """Age of an RFC 3339 timestamp, `<unknown>` when there is none."""
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return human_duration(((now or datetime.now(UTC)) - then).total_seconds())


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Object, datetime], str]
    wide_only: bool = False

    @classmethod
    def of(cls, printer: PrinterColumn) -> Column:
        def value(obj: Object, now: datetime) -> str:
            found = printer.value(obj)
            if printer.type == "date":
                return age(found, now)
            return "" if found is None else str(found)

        return cls(printer.name, value, wide_only=printer.priority > 0)


def _bindings(obj: Object, _: datetime) -> str:
    return str(len((obj.get("status") or {}).get("bindingClusters") or []))


def _releases(obj: Object, _: datetime) -> str:
    status = obj.get("status") or {}
    return f"{status.get('completedReleases') or 0}/{status.get('desiredReleases') or 0}"


def _unscheduled(obj: Object, _: datetime) -> str:
    return str(sum(((obj.get("status") or {}).get("unscheduledReplicas") or {}).values()))


def _strategy(obj: Object, _: datetime) -> str:
    return str((obj.get("spec") or {}).get("schedulingStrategy") or "")


def _scheduled(field: str) -> Callable[[Object, datetime], str]:
    condition = PrinterColumn(field.upper(), f".status.conditions[?(@.type=='Scheduled')].{field}")
    return lambda obj, _now: str(condition.value(obj) or "")


FEEDS_NOT_AVAILABLE = "FeedsNotAvailable"
"""Some cluster has not (or not yet) got a feed running: the aggregated status cannot tell a release
that failed from one still on its way; `cnet rollout status` shows which, with the Descriptions' reasons."""


def not_progressing(obj: Object) -> str:
    """Why a Subscription is not progressing, "" when nothing says so: the reason of its first False
    condition (the scheduler's `Scheduled`: Unschedulable, PartiallyScheduled, WaitingForFeedInventory;
    any other a controller sets, e.g. for feeds that cannot be read), else FeedsNotAvailable when a
    cluster reports one of its feeds unavailable (the aggregated status: a missing feed, a failed or
    an unfinished release)."""
    status = obj.get("status") or {}
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("status") == "False":
            return str(condition.get("reason") or condition.get("type") or "")
    for feed in status.get("aggregatedStatuses") or []:
        details = feed.get("feedStatusDetails") or [] if isinstance(feed, dict) else []
        if any(isinstance(d, dict) and d.get("available") is False for d in details):
            return FEEDS_NOT_AVAILABLE
    return ""


LEADING_EXTRAS: dict[str, list[Column]] = {
    "Subscription": [
        Column("SCHEDULED", _scheduled("status")),
        Column("REASON", lambda obj, _now: not_progressing(obj)),
    ],
}

WIDE_EXTRAS: dict[str, list[Column]] = {
    "Subscription": [
        Column("MESSAGE", _scheduled("message"), wide_only=True),
        Column("STRATEGY", _strategy, wide_only=True),
        Column("BINDINGS", _bindings, wide_only=True),
        Column("UNSCHEDULED", _unscheduled, wide_only=True),
        Column("COMPLETED/DESIRED", _releases, wide_only=True),
    ],
}


def columns_for(kind: str, wide: bool) -> list[Column]:
    """The columns after NAME (and NAMESPACE); every kind has at least AGE."""
    columns = LEADING_EXTRAS.get(kind, []) + [Column.of(c) for c in table_columns(kind)] + WIDE_EXTRAS.get(kind, [])
    return [c for c in columns if wide or not c.wide_only]


__all__ = [
    "AGE",
    "PRINTER_COLUMNS",
    "Column",
    "PrinterColumn",
    "age",
    "columns_for",
    "crd_columns",
    "human_duration",
    "not_progressing",
    "table_columns",
]

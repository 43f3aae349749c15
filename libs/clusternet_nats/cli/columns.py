"""What `cnet get` shows for each kind: the CRDs' printer columns, plus a few for -o wide.

The columns come from `api.printer_columns`, the table the generated CRDs also use, so `cnet get`
and `kubectl get` against the bridge's parent show the same; columns with a priority appear only
with `-o wide`, as in kubectl. Subscriptions have only AGE in Clusternet's CRD, which we keep as
it is; `cnet get` adds before it whether the scheduler placed every replica and, if not, why (our
`Scheduled` condition), and its wide view what people ask next: the scheduler's message, how they
are scheduled, onto how many clusters, how many replicas found no room, and how far the rollout
got (computed values a JSONPath column cannot express).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from clusternet_nats.api import KindInfo
from clusternet_nats.api.printer_columns import PrinterColumn, table_columns
from clusternet_nats.cli.printers import age, render_table

Object = dict[str, Any]


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


LEADING_EXTRAS: dict[str, list[Column]] = {
    "Subscription": [Column("SCHEDULED", _scheduled("status")), Column("REASON", _scheduled("reason"))],
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

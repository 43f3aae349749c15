"""`cnet get`'s tables: NAME (and NAMESPACE with -A) then each kind's columns from
`api.printer_columns.columns_for`, the same columns the hub's Table answers give kubectl, so the two
tools print the same bytes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from clusternet_nats.api import KindInfo
from clusternet_nats.api.printer_columns import columns_for
from clusternet_nats.cli.printers import render_table
from clusternet_nats.cli.resources import Resource

Object = dict[str, Any]


def resource_name(info: KindInfo) -> str:
    """`subscription.apps.clusternet.io`, as kubectl names a kind in its output."""
    return f"{info.singular}.{info.group}"


def object_table(
    resource: Resource, objects: list[Object], now: datetime, *, all_namespaces: bool, wide: bool, qualified: bool
) -> str:
    """One kind's table; `qualified` prefixes names with the kind, as kubectl does for several kinds."""
    columns = columns_for(resource.kind, wide)
    with_namespace = all_namespaces and resource.namespaced
    headers = (["NAMESPACE"] if with_namespace else []) + ["NAME"] + [c.header for c in columns]
    rows = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        name = f"{resource.name}/{meta.get('name', '')}" if qualified else str(meta.get("name", ""))
        row = ([str(meta.get("namespace", ""))] if with_namespace else []) + [name]
        rows.append(row + [c.value(obj, now) for c in columns])
    return render_table(headers, rows)

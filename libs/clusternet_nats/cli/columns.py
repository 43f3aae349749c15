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

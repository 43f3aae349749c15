"""`cnet describe`: one object as kubectl describes a custom resource, then its Events.

Field names are spelled out as words ("schedulingStrategy" as "Scheduling Strategy") and
nested by indentation, as `kubectl describe` does for CRDs, so the output reads the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from clusternet_nats.api.labels import CLUSTER_NAME, SUBS_UID
from clusternet_nats.api.paths import collection_path
from clusternet_nats.api.printer_columns import age
from clusternet_nats.api.registry import by_kind
from clusternet_nats.cli.printers import render_table

Object = dict[str, Any]

_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[A-Z]")
_ACRONYMS = frozenset({"api", "uid", "id", "url", "ip", "cidr", "ca", "qps", "http", "dns", "cpu", "json", "yaml"})
_TOP = ("metadata", "apiVersion", "kind")
_SHOWN_META = ("name", "namespace", "labels", "annotations", "managedFields")
_INDENT = "  "


def label_for(key: str) -> str:
    """`apiVersion` -> `API Version`; keys that are not identifiers (label keys) stay as they are."""
    if not _IDENTIFIER.match(key):
        return key
    words = _WORDS.findall(key)
    return " ".join(w.upper() if w.lower() in _ACRONYMS else w[:1].upper() + w[1:] for w in words)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _mapping(data: Object, depth: int, labels: bool = True) -> list[str]:
    keys = {key: label_for(key) if labels else key for key in data}
    width = max((len(label) for key, label in keys.items() if not isinstance(data[key], dict | list)), default=0)
    lines = []
    for key, value in data.items():
        pad = _INDENT * depth
        if isinstance(value, dict | list) and value:
            lines.append(f"{pad}{keys[key]}:")
            lines.extend(_value(value, depth + 1, labels=key not in ("labels", "matchLabels", "annotations")))
        else:
            shown = _scalar(value) if not isinstance(value, dict | list) else ""
            lines.append(f"{pad}{(keys[key] + ':').ljust(width + 3)}{shown}".rstrip())
    return lines


def _value(value: Any, depth: int, labels: bool = True) -> list[str]:
    if isinstance(value, dict):
        return _mapping(value, depth, labels)
    lines = []
    for item in value:
        if isinstance(item, dict | list):
            lines.extend(_value(item, depth, labels))
        else:
            lines.append(f"{_INDENT * depth}{_scalar(item)}")
    return lines


def _pairs(title: str, values: dict[str, str] | None, sep: str) -> list[str]:
    items = [f"{k}{sep}{v}" for k, v in sorted((values or {}).items())] or ["<none>"]
    return [f"{title:<14}{items[0]}", *(" " * 14 + item for item in items[1:])]


def events_table(events: list[Object], now: datetime) -> str:
    if not events:
        return "Events:       <none>"
    rows = []
    for event in events:
        last = age(event.get("lastTimestamp") or event.get("firstTimestamp"), now)
        count = event.get("count") or 1
        when = f"{last} (x{count} over {age(event.get('firstTimestamp'), now)})" if count > 1 else last
        source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""
        kind, reason, message = (str(event.get(k, "")) for k in ("type", "reason", "message"))
        rows.append([kind, reason, when, source, message])
    headers = ["Type", "Reason", "Age", "From", "Message"]
    underline = ["-" * len(h) for h in headers]
    return "Events:\n" + render_table(headers, [underline, *rows], indent=_INDENT)


def _available(status: Object, feed: str, clusters: list[str]) -> dict[str, str]:
    """Per bound cluster, the available replicas the deployer aggregated for one feed key."""
    for aggregated in status.get("aggregatedStatuses") or []:
        parts = [aggregated.get(k) for k in ("apiVersion", "kind", "namespace", "name")]
        if "/".join(str(p) for p in parts if p) != feed:
            continue
        details = aggregated.get("feedStatusDetails") or []
        # The deployer lists them in bindingClusters order; by cluster name when some are missing.
        pairs: Iterable[tuple[str, Object]]
        if len(details) == len(clusters):
            pairs = zip(clusters, details, strict=True)
        else:
            by_name = {str(d.get("clusterName", "")): d for d in details}
            pairs = ((c, by_name[c.rsplit("/", 1)[-1]]) for c in clusters if c.rsplit("/", 1)[-1] in by_name)
        return {c: str((d.get("replicaStatus") or {}).get("availableReplicas") or 0) for c, d in pairs}
    return {}


def placement(obj: Object) -> list[str]:
    """A Subscription's placement per cluster and feed: the replicas the scheduler gave, what the
    predictor said the cluster can hold, and what the cluster reports available; then what found
    no room. Status holds these as lists in bindingClusters order, hard to read by eye."""
    status = obj.get("status") or {}
    clusters = [str(c) for c in status.get("bindingClusters") or []]
    replicas, predicted = status.get("replicas") or {}, status.get("predictedReplicas") or {}
    draining = set(status.get("drainingClusters") or [])
    rows = []
    for feed, shares in sorted(replicas.items()):
        if not shares:
            continue
        available = _available(status, feed, clusters)
        figures = predicted.get(feed) or []
        for i, cluster in enumerate(clusters):
            room = figures[i] if i < len(figures) else None
            rows.append(
                [
                    cluster + (" (draining)" if cluster in draining else ""),
                    feed,
                    _scalar(shares[i] if i < len(shares) else None),
                    "<unknown>" if room is None else str(room),
                    available.get(cluster, "<none>"),
                ]
            )
    unscheduled = {feed: n for feed, n in (status.get("unscheduledReplicas") or {}).items() if n}
    if not rows and not unscheduled:
        return []
    lines = ["Placement:"]
    if rows:
        headers = ["Cluster", "Feed", "Replicas", "Predicted", "Available"]
        underline = ["-" * len(h) for h in headers]
        lines.append(render_table(headers, [underline, *rows], indent=_INDENT))
    lines += [f"{_INDENT}Unscheduled: {n} of {feed}" for feed, n in sorted(unscheduled.items())]
    return lines


def deleting_subscription(obj: Object) -> str | None:
    """The uid of a Subscription being deleted (its children are still pruning), else None."""
    meta = obj.get("metadata") or {}
    if obj.get("kind") != "Subscription" or not meta.get("deletionTimestamp"):
        return None
    return str(meta.get("uid") or "") or None


def bases_of(uid: str) -> tuple[str, str]:
    """Where a Subscription's Bases are listed from: the path and the label selector."""
    return collection_path(by_kind("Base")), f"{SUBS_UID}={uid}"


def pending_deletion(bases: Iterable[Object]) -> list[str]:
    """What a Subscription's deletion waits for: the clusters whose Base is still there, each
    until the cluster has pruned the objects it was given (deployer/deletion.py)."""
    clusters = sorted(
        f"{(b.get('metadata') or {}).get('namespace', '')}/"
        f"{((b.get('metadata') or {}).get('labels') or {}).get(CLUSTER_NAME, '')}"
        for b in bases
    )
    if not clusters:
        return ["Deletion:", f"{_INDENT}Pending in clusters: <none> (finishing)"]
    return ["Deletion:", f"{_INDENT}Pending in clusters: {', '.join(clusters)}"]


def describe(obj: Object, events: list[Object], now: datetime, bases: list[Object] | None = None) -> str:
    """`bases`: a deleting Subscription's remaining Bases (see `pending_deletion`)."""
    meta = obj.get("metadata") or {}
    lines = [f"{'Name:':<14}{meta.get('name', '')}"]
    if meta.get("namespace"):
        lines.append(f"{'Namespace:':<14}{meta['namespace']}")
    lines += _pairs("Labels:", meta.get("labels"), "=")
    lines += _pairs("Annotations:", meta.get("annotations"), ": ")
    lines.append(f"{'API Version:':<14}{obj.get('apiVersion', '')}")
    lines.append(f"{'Kind:':<14}{obj.get('kind', '')}")
    rest_of_meta = {k: v for k, v in meta.items() if k not in _SHOWN_META}
    body = {"metadata": rest_of_meta} | {k: v for k, v in obj.items() if k not in _TOP}
    lines += _mapping(body, 0)
    if obj.get("kind") == "Subscription":
        lines += placement(obj)
    if bases is not None:
        lines += pending_deletion(bases)
    lines.append(events_table(events, now))
    return "\n".join(lines)

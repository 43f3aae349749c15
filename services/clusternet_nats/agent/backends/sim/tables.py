"""`Table` answers of a simulated cluster's API server, with kube-apiserver's columns for the
built-in kinds, so `kubectl get` through the proxy prints what it prints for a real cluster
(`READY 2/2  UP-TO-DATE  AVAILABLE` for Deployments, `STATUS Active` for Namespaces...).

kubectl asks for a Table (meta.k8s.io v1, then v1beta1) with a JSON fallback; rows carry the
object's metadata (`includeObject=Metadata`, kubectl's default, from which it takes the
NAMESPACE column of `-A`), the whole object (`Object`) or nothing (`None`). Columns of priority 1
show only with `-o wide`. A kind kube-apiserver has no printer for, or a custom resource, gets
NAME and AGE, as its default table convertor gives (CRDs' additionalPrinterColumns are not read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from clusternet_nats.agent.backends.sim.pods import pod_ready
from clusternet_nats.api.printer_columns import age

Body = dict[str, Any]
TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT = ("None", "Metadata", "Object")


@dataclass(frozen=True)
class _Column:
    name: str
    cell: Callable[[Body, datetime], Any]
    type: str = "string"
    priority: int = 0

    def definition(self) -> Body:
        return {"name": self.name, "type": self.type, "format": "", "description": "", "priority": self.priority}


def _path(body: Body, *keys: str) -> Any:
    value: Any = body
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _status_int(*keys: str) -> Callable[[Body, datetime], int]:
    return lambda body, _now: int(_path(body, "status", *keys) or 0)


def _ready(body: Body, _now: datetime) -> str:
    return f"{int(_path(body, 'status', 'readyReplicas') or 0)}/{int(_path(body, 'spec', 'replicas') or 0)}"


def _containers(field: str) -> Callable[[Body, datetime], str]:
    def cell(body: Body, _now: datetime) -> str:
        containers = _path(body, "spec", "template", "spec", "containers") or []
        return ",".join(str(c.get(field, "")) for c in containers if isinstance(c, dict))

    return cell


def _labels_text(labels: Any) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or "<none>"


def _selector(body: Body, _now: datetime) -> str:
    return _labels_text(_path(body, "spec", "selector", "matchLabels"))


def _data_count(body: Body, _now: datetime) -> int:
    return len(body.get("data") or {}) + len(body.get("binaryData") or body.get("stringData") or {})


def _ports(body: Body, _now: datetime) -> str:
    ports = _path(body, "spec", "ports") or []
    return ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports if isinstance(p, dict)) or "<none>"


def _node_status(body: Body, _now: datetime) -> str:
    conditions = _path(body, "status", "conditions") or []
    ready: Body = next((c for c in conditions if c.get("type") == "Ready"), {})
    return "Ready" if ready.get("status") == "True" else "NotReady"


def _completions(body: Body, _now: datetime) -> str:
    return f"{int(_path(body, 'status', 'succeeded') or 0)}/{int(_path(body, 'spec', 'completions') or 1)}"


def _text(*keys: str, default: str = "") -> Callable[[Body, datetime], str]:
    return lambda body, _now: str(_path(body, *keys) or default)


_AGE = _Column("Age", lambda body, now: age(_path(body, "metadata", "creationTimestamp"), now))
_WORKLOAD_WIDE = (
    _Column("Containers", _containers("name"), priority=1),
    _Column("Images", _containers("image"), priority=1),
)
_REPLICATED_TAIL = (_AGE, *_WORKLOAD_WIDE, _Column("Selector", _selector, priority=1))

_COLUMNS: dict[str, tuple[_Column, ...]] = {
    "Namespace": (_Column("Status", _text("status", "phase", default="Active")), _AGE),
    "Node": (
        _Column("Status", _node_status),
        _Column("Roles", lambda _b, _n: "<none>"),
        _AGE,
        _Column("Version", _text("status", "nodeInfo", "kubeletVersion")),
    ),
    "Deployment": (
        _Column("Ready", _ready),
        _Column("Up-to-date", _status_int("updatedReplicas"), "integer"),
        _Column("Available", _status_int("availableReplicas"), "integer"),
        *_REPLICATED_TAIL,
    ),
    "StatefulSet": (_Column("Ready", _ready), _AGE, *_WORKLOAD_WIDE),
    "ReplicaSet": (
        _Column("Desired", lambda body, _now: int(_path(body, "spec", "replicas") or 0), "integer"),
        _Column("Current", _status_int("replicas"), "integer"),
        _Column("Ready", _status_int("readyReplicas"), "integer"),
        *_REPLICATED_TAIL,
    ),
    "Job": (_Column("Completions", _completions), _AGE, *_WORKLOAD_WIDE),
    "Pod": (
        _Column("Ready", lambda body, _now: pod_ready(body)),
        _Column("Status", _text("status", "phase")),
        _Column("Restarts", lambda _b, _n: 0, "integer"),
        _AGE,
    ),
    "ConfigMap": (_Column("Data", _data_count, "integer"), _AGE),
    "Secret": (_Column("Type", _text("type", default="Opaque")), _Column("Data", _data_count, "integer"), _AGE),
    "Service": (
        _Column("Type", _text("spec", "type", default="ClusterIP")),
        _Column("Cluster-IP", _text("spec", "clusterIP", default="<none>")),
        _Column("External-IP", lambda _b, _n: "<none>"),
        _Column("Port(s)", _ports),
        _AGE,
        _Column("Selector", lambda body, _now: _labels_text(_path(body, "spec", "selector")), priority=1),
    ),
}


def table_version(accept: Iterable[tuple[str, str]]) -> str | None:
    """The meta.k8s.io version of the Table the client prefers, None when it prefers JSON (or asks
    for neither): media types count in the order the Accept header gives them."""
    for header in (v for k, v in accept if k.lower() == "accept"):
        for entry in header.split(","):
            media, *params = (p.strip() for p in entry.split(";"))
            values = dict(p.partition("=")[::2] for p in params)
            if media not in ("application/json", "*/*", "application/*"):
                continue
            if values.get("as") == "Table" and values.get("g") == "meta.k8s.io" and values.get("v") in TABLE_VERSIONS:
                return values["v"]
            if "as" not in values:
                return None
    return None


def table(kind: str, objects: list[Body], version: str, include: str, metadata: Body, headers: bool = True) -> Body:
    """The Table of `objects` of `kind`; `headers` False leaves the column definitions out (a
    watch sends them with its first event only, as kube-apiserver does)."""
    columns = _COLUMNS.get(kind, (_AGE,))
    now = datetime.now(UTC)
    name = {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}
    rows = []
    for obj in objects:
        row: Body = {"cells": [_path(obj, "metadata", "name") or "", *(c.cell(obj, now) for c in columns)]}
        if include == "Object":
            row["object"] = obj
        elif include == "Metadata":
            partial = {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}"}
            row["object"] = partial | {"metadata": obj.get("metadata") or {}}
        rows.append(row)
    definitions = [name, *(c.definition() for c in columns)] if headers else []
    head: Body = {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}", "metadata": metadata}
    return head | {"columnDefinitions": definitions, "rows": rows}

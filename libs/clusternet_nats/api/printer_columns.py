"""The table columns of each kind, as Clusternet's CRDs declare them (additionalPrinterColumns).

One table feeds both the generated CRDs (so `kubectl get` on a parent apiserver shows them) and
`cnet get` (which evaluates the same JSONPaths), so the two can never show different columns.
Only the JSONPath forms Clusternet's columns use are evaluated: `.a.b` and `.a[?(@.k=='v')].b`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

ColumnType = Literal["string", "integer", "number", "boolean", "date"]

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


__all__ = ["AGE", "PRINTER_COLUMNS", "PrinterColumn", "crd_columns", "table_columns"]

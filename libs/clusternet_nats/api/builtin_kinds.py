"""The built-in Kubernetes resources the hub serves at their own paths, as Clusternet's shadow API
does through its parent cluster's discovery.

kubectl maps `apps/v1 Deployment` to `deployments` through discovery before it sends anything, so
the hub must list these group versions for `kubectl apply -f deploy.yaml` to reach it. Plural and
scope come from the loader's rules (`guess_resource`, `CLUSTER_SCOPED_KINDS`), so the loader and
discovery cannot disagree about where a kind lives; short names and the `all` category are
Kubernetes' own.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusternet_nats.api.loader import CLUSTER_SCOPED_KINDS, guess_resource

BUILTIN_VERBS = ("create", "delete", "get", "list", "patch", "update")

BUILTIN_SHORT_NAMES: dict[str, tuple[str, ...]] = {
    "ConfigMap": ("cm",),
    "CronJob": ("cj",),
    "CustomResourceDefinition": ("crd", "crds"),
    "DaemonSet": ("ds",),
    "Deployment": ("deploy",),
    "Endpoints": ("ep",),
    "HorizontalPodAutoscaler": ("hpa",),
    "Ingress": ("ing",),
    "LimitRange": ("limits",),
    "Namespace": ("ns",),
    "NetworkPolicy": ("netpol",),
    "PersistentVolume": ("pv",),
    "PersistentVolumeClaim": ("pvc",),
    "Pod": ("po",),
    "PodDisruptionBudget": ("pdb",),
    "PriorityClass": ("pc",),
    "ReplicaSet": ("rs",),
    "ReplicationController": ("rc",),
    "ResourceQuota": ("quota",),
    "Service": ("svc",),
    "ServiceAccount": ("sa",),
    "StatefulSet": ("sts",),
    "StorageClass": ("sc",),
}
"""Kubernetes' short names for its built-in kinds (what Clusternet's shadow discovery copies from
the parent cluster's)."""

IN_ALL_CATEGORY = frozenset(
    {
        "CronJob",
        "DaemonSet",
        "Deployment",
        "HorizontalPodAutoscaler",
        "Job",
        "Pod",
        "ReplicaSet",
        "ReplicationController",
        "Service",
        "StatefulSet",
    }
)

_SERVED: dict[str, tuple[str, ...]] = {
    "v1": ("ConfigMap", "Secret", "Service", "ServiceAccount", "PersistentVolumeClaim"),
    "apps/v1": ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"),
    "batch/v1": ("Job", "CronJob"),
    "networking.k8s.io/v1": ("Ingress", "NetworkPolicy"),
    "rbac.authorization.k8s.io/v1": ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"),
    "policy/v1": ("PodDisruptionBudget",),
    "autoscaling/v2": ("HorizontalPodAutoscaler",),
    "apiextensions.k8s.io/v1": ("CustomResourceDefinition",),
}


class KubernetesNames:
    """Kubernetes' short names and categories of a kind, for anything discovery lists by kind."""

    kind: str

    @property
    def short_names(self) -> tuple[str, ...]:
        return BUILTIN_SHORT_NAMES.get(self.kind, ())

    @property
    def categories(self) -> tuple[str, ...]:
        return ("all",) if self.kind in IN_ALL_CATEGORY else ()


@dataclass(frozen=True)
class BuiltinKind(KubernetesNames):
    """One built-in resource the hub serves (stored as a Manifest like anything the shadow API takes)."""

    group: str
    version: str
    kind: str

    @property
    def plural(self) -> str:
        return guess_resource(self.kind)

    @property
    def namespaced(self) -> bool:
        return self.kind not in CLUSTER_SCOPED_KINDS

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


BUILTIN_KINDS: tuple[BuiltinKind, ...] = tuple(
    BuiltinKind(*(gv.rpartition("/")[::2]), kind) for gv, kinds in _SERVED.items() for kind in kinds
)


def builtin_group_versions() -> dict[tuple[str, str], list[BuiltinKind]]:
    """(group, version) -> its kinds; the core group is ""."""
    out: dict[tuple[str, str], list[BuiltinKind]] = {}
    for kind in BUILTIN_KINDS:
        out.setdefault((kind.group, kind.version), []).append(kind)
    return out


def builtin_by_plural(plural: str) -> BuiltinKind | None:
    """The built-in kind served as `plural` (plurals are unique across the table)."""
    return next((k for k in BUILTIN_KINDS if k.plural == plural), None)


__all__ = [
    "BUILTIN_KINDS",
    "BUILTIN_SHORT_NAMES",
    "BUILTIN_VERBS",
    "IN_ALL_CATEGORY",
    "BuiltinKind",
    "KubernetesNames",
    "builtin_by_plural",
    "builtin_group_versions",
]

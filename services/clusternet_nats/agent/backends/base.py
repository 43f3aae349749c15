"""The contract between the agent's reconcilers and a child cluster, whatever that cluster is.

The Description controller and the heartbeat speak only this Protocol, so the simulated
clusters that tests, demos and benchmarks run by the thousand (`sim`) and a real Kubernetes
cluster (`kube`) are interchangeable. Everything a backend applies carries the owner label
(`labels.APPLIED_BY_DESCRIPTION`): pruning and restart recovery rely on nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from clusternet_nats.agent.backends.apiserver import ApiServer
from clusternet_nats.api.apps import HelmRelease
from clusternet_nats.api.meta import Taint

RawObject = Mapping[str, Any]
"""One decoded Kubernetes object, as JSON gives it (not the Clusternet kind `Manifest`)."""

FIRST_KINDS = ("Namespace", "CustomResourceDefinition")
"""Applied before everything else, so the objects that live in or depend on them can be."""


@dataclass(frozen=True, order=True)
class ObjectRef:
    """Which object: its apiVersion, kind, namespace ("" when cluster-scoped) and name."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.api_version} {self.kind} {where}"


@dataclass
class ApplyOutcome:
    """What an apply did: the objects now in the cluster, and why the others are not."""

    applied: list[ObjectRef] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    restored: list[ObjectRef] = field(default_factory=list)
    """Of `applied`, those put back after being changed or deleted in the cluster (drift)."""


@dataclass(frozen=True)
class NodeFacts:
    """One node as the predictor needs it: labels, readiness, taints, whether it is cordoned, and
    what its pods request (`pods`: how many)."""

    name: str
    ready: bool
    labels: dict[str, str]
    capacity: dict[str, str]
    allocatable: dict[str, str]
    requested: dict[str, str]
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    pods_by_description: dict[str, int] | None = None
    """Of the pods in `requested`, how many each Description (owner) applied; None: not counted."""


@dataclass(frozen=True)
class ClusterFacts:
    """What a heartbeat reports about the cluster; quantities as Kubernetes prints them."""

    k8s_version: str
    platform: str
    ready_nodes: int
    not_ready_nodes: int
    capacity: dict[str, str]
    allocatable: dict[str, str]
    cpu_usage: str
    memory_usage: str
    running_pods: int
    total_pods: int
    nodes: tuple[NodeFacts, ...] = ()
    apiserver_url: str = ""
    healthz: bool = True
    livez: bool = True
    readyz: bool = True
    unknown_nodes: int = 0
    lost_nodes: int = 0
    """Nodes reporting no Ready condition at all (Clusternet's LostNodes)."""
    service_cidr: str | None = None
    """The services' CIDR, when found (kube/network.py); None: not reported."""
    cluster_cidr: str | None = None
    """The pods' CIDR, when found (kube/network.py); None: not reported."""


StatusListener = Callable[[str], None]
"""Called with an owner (`<namespace>.<name>` of a Description) whose objects' status changed."""


class ClusterBackend(Protocol):
    async def start(self) -> None:
        """Loads whatever the cluster already holds; called before anything else."""

    async def close(self) -> None:
        """Flushes and releases; the last call."""

    async def apply(self, owner: str, manifests: Sequence[RawObject]) -> ApplyOutcome:
        """Creates or updates each manifest, labelled with `owner`, in `install_order`."""

    async def install_releases(self, owner: str, releases: Sequence[HelmRelease]) -> ApplyOutcome:
        """Installs or upgrades each HelmRelease (chart, options and values), labelled with `owner`."""

    async def prune(self, owner: str, keep: Collection[ObjectRef]) -> list[ObjectRef]:
        """Deletes what `owner` applied except `keep` (empty: everything); returns what went."""

    async def observed_status(self, ref: ObjectRef) -> dict[str, Any] | None:
        """The object's status as the cluster reports it; None when the object is absent."""

    async def owners(self) -> set[str]:
        """Every owner label value present, so owners with no Description can be pruned."""

    async def facts(self) -> ClusterFacts: ...

    def apiserver(self) -> ApiServer:
        """The cluster's API server as the hub's proxy reaches it (after `start`)."""

    def on_status_change(self, listener: StatusListener) -> None:
        """Asks to be told when objects' status changes by itself (capacity freed, pods ready)."""

    def on_drift(self, listener: StatusListener) -> None:
        """Asks to be told when an object applied is changed (in a field the apply set) or deleted
        in the cluster by anyone else, so it is applied again (Clusternet's Recovery)."""


def _install_rank(manifest: RawObject) -> int:
    kind = manifest.get("kind")
    return FIRST_KINDS.index(kind) if kind in FIRST_KINDS else len(FIRST_KINDS)


def install_order(manifests: Sequence[RawObject]) -> list[RawObject]:
    """Namespaces, then CRDs, then the rest in the order given (a stable sort)."""
    return sorted(manifests, key=_install_rank)


def install_stages(manifests: Sequence[RawObject]) -> list[list[RawObject]]:
    """`install_order` cut where the kind's rank changes: what one stage holds may be applied
    together, each stage once the one before it is applied (a Deployment needs its Namespace)."""
    stages: list[list[RawObject]] = []
    rank = -1
    for manifest in install_order(manifests):
        if _install_rank(manifest) != rank:
            rank = _install_rank(manifest)
            stages.append([])
        stages[-1].append(manifest)
    return stages


def delete_order(refs: Collection[ObjectRef]) -> list[ObjectRef]:
    """The reverse of `install_order`: everything else, then CRDs, then Namespaces."""

    def rank(ref: ObjectRef) -> int:
        return -FIRST_KINDS.index(ref.kind) if ref.kind in FIRST_KINDS else -len(FIRST_KINDS)

    return sorted(refs, key=rank)

"""What the sim's controllers and scheduler would make of workloads: pods placed, status reported.

Every replica of a Deployment, StatefulSet or ReplicaSet is a pod requesting the sum of its
containers' requests (a container without one counts as 100m CPU / 128Mi, so nothing is free).
Pods are placed first-fit onto the nodes they may land on by the predictor's own rule
(domain/nodefit.py: nodeSelector, required node affinity, taints), workloads in creation order,
and the whole placement is recomputed from scratch whenever a workload changes: deterministic,
so the same objects always give the same statuses, and deleting one workload lets the pending
pods of later ones in. A pod that is placed is ready; Jobs complete at once and hold no capacity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim.nodes import Node
from clusternet_nats.agent.backends.sim.store import Body, SimObject
from clusternet_nats.api.quantity import milli_value, value
from clusternet_nats.domain.nodefit import Demand, RequirementError, admits
from clusternet_nats.domain.replicas import replica_requirements

DEFAULT_CPU = milli_value("100m")
DEFAULT_MEMORY = value("128Mi")
REPLICATED = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")})
JOB = ("batch", "Job")


def _group_kind(ref: ObjectRef) -> tuple[str, str]:
    return ref.api_version.rpartition("/")[0], ref.kind


def is_replicated(ref: ObjectRef) -> bool:
    return _group_kind(ref) in REPLICATED


def is_job(ref: ObjectRef) -> bool:
    return _group_kind(ref) == JOB


@dataclass(frozen=True)
class PodRequest:
    cpu: int
    memory: int
    demand: Demand
    """Where the pod may land (its resources are `cpu` and `memory`, with the sim's defaults)."""


def replicas(body: Body) -> int:
    value = body.get("spec", {}).get("replicas", 1)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"spec.replicas: must be a non-negative integer, not {value!r}")
    return value


_PARSED_LIMIT = 4096
_parsed: dict[str, PodRequest] = {}
"""Pod requests by their pod spec's repr (equal for equal specs): thousands of clusters in one agent
process hold the same template, and every placement reads each workload's request again."""


def pod_request(body: Body) -> PodRequest:
    """Raises ValueError naming the field when a request is not a valid quantity."""
    pod_spec = body.get("spec", {}).get("template", {}).get("spec", {})
    key = repr(pod_spec)
    request = _parsed.get(key)
    if request is None:
        request = _parse_pod_request(pod_spec)
        if len(_parsed) >= _PARSED_LIMIT:
            _parsed.clear()
        _parsed[key] = request
    return request


def _parse_pod_request(pod_spec: Body) -> PodRequest:
    try:
        demand = Demand.of(replica_requirements(pod_spec))
    except RequirementError as err:
        raise ValueError(f"spec.template.spec.{err}") from None
    containers = pod_spec.get("containers") or []
    if not containers:
        return PodRequest(DEFAULT_CPU, DEFAULT_MEMORY, demand)
    cpu = memory = 0
    for i, container in enumerate(containers):
        requests = (container.get("resources") or {}).get("requests") or {}
        path = f"spec.template.spec.containers[{i}].resources.requests"
        try:
            cpu += milli_value(str(requests["cpu"])) if "cpu" in requests else DEFAULT_CPU
            memory += value(str(requests["memory"])) if "memory" in requests else DEFAULT_MEMORY
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
    return PodRequest(cpu, memory, demand)


@dataclass
class Placement:
    ready: dict[ObjectRef, int] = field(default_factory=dict)
    cpu: int = 0
    memory: int = 0
    pods: int = 0
    pending: int = 0
    per_node: list[tuple[int, int, int]] = field(default_factory=list)
    """(CPU, memory, pods) requested on each node, in the nodes' order."""
    owners: list[dict[str, int]] = field(default_factory=list)
    """Pods on each node per owning Description, in the nodes' order (the node inventory's
    `podsByDescription`): placed and counted in the same recomputation, so never out of step."""


def fits(req: PodRequest, free: Sequence[int]) -> bool:
    """One more pod of `req` fits a node with `free` (CPU, memory, pod slots) left."""
    return free[0] >= req.cpu and free[1] >= req.memory and free[2] > 0


def place(workloads: Iterable[SimObject], nodes: Sequence[Node]) -> Placement:
    """First-fit of every replica onto nodes, oldest workload first."""
    free = [[n.cpu, n.memory, n.pods] for n in nodes]
    owners: list[dict[str, int]] = [{} for _ in nodes]
    out = Placement()
    for obj in sorted(workloads, key=lambda o: o.created):
        want, req = replicas(obj.body), pod_request(obj.body)
        allowed = [i for i, node in enumerate(nodes) if admits(req.demand, node)] if want else []
        ready = 0
        while ready < want:
            i = next((i for i in allowed if fits(req, free[i])), None)
            if i is None:
                break  # no node fits one more pod of this size
            slot = free[i]
            if obj.owner:
                owners[i][obj.owner] = owners[i].get(obj.owner, 0) + 1
            slot[0] -= req.cpu
            slot[1] -= req.memory
            slot[2] -= 1
            ready += 1
        out.ready[obj.ref] = ready
        out.cpu += ready * req.cpu
        out.memory += ready * req.memory
        out.pods += ready
        out.pending += want - ready
    out.per_node = [(n.cpu - f[0], n.memory - f[1], n.pods - f[2]) for n, f in zip(nodes, free, strict=True)]
    out.owners = owners
    return out


def replicated_status(obj: SimObject, ready: int) -> dict[str, Any]:
    want = replicas(obj.body)
    status: dict[str, Any] = {
        "observedGeneration": obj.generation,
        "replicas": want,
        "updatedReplicas": want,
        "readyReplicas": ready,
        "availableReplicas": ready,
    }
    if obj.ref.kind == "Deployment":
        status["unavailableReplicas"] = want - ready
    elif obj.ref.kind == "StatefulSet":
        status["currentReplicas"] = want
    else:
        status["fullyLabeledReplicas"] = want
        del status["updatedReplicas"]
    return status


def job_status(obj: SimObject) -> dict[str, Any]:
    completions = obj.body.get("spec", {}).get("completions") or 1
    return {
        "active": 0,
        "succeeded": completions,
        "conditions": [{"type": "Complete", "status": "True"}],
    }

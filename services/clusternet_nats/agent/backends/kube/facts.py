"""What a heartbeat says about a real cluster, gathered as Clusternet's status controller does.

Version and platform from `/version`, health from `/healthz`, `/livez`, `/readyz`, node
counts by Ready condition (no condition at all is "lost"), capacity and allocatable summed over
nodes, pods running and total, and per node its taints, whether it is cordoned and what its
scheduled, unfinished pods request, so the predictor can tell whether a replica fits on one node
rather than in the sum. Resource usage is
what running pods request: Clusternet reads metrics-server, which a cluster need not run. The
service and pod CIDRs come from the control plane's pods' command lines, else the agent's
`SERVICE_CIDR` and `CLUSTER_CIDR` (network.py). Summing and counting are pure functions of the
listed objects; `gather` only fetches.
"""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from clusternet_nats.agent.backends.base import ClusterFacts, NodeFacts
from clusternet_nats.agent.backends.kube.network import find_cluster_cidr, find_service_cidr
from clusternet_nats.api.meta import Taint
from clusternet_nats.api.quantity import cpu_text, memory_text, milli_value, value
from clusternet_nats.domain.replicas import replica_requirements
from clusternet_nats.kube.rest import Json, KubeApi

_FINISHED = ("Succeeded", "Failed")
_BYTES = ("memory", "ephemeral-storage")


def _amount(resource: str, quantity: str) -> int:
    return milli_value(quantity) if resource == "cpu" else value(quantity)


def _text(resource: str, amount: int) -> str:
    if resource == "cpu":
        return cpu_text(amount)
    if resource in _BYTES or resource.startswith("hugepages-"):
        return memory_text(amount)
    return str(amount)


def sum_resources(lists: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """Resource lists added up per resource name, printed as Kubernetes prints them."""
    totals: dict[str, int] = defaultdict(int)
    for resources in lists:
        for name, quantity in resources.items():
            totals[name] += _amount(name, str(quantity))
    return {name: _text(name, amount) for name, amount in sorted(totals.items())}


def ready_condition(node: Json) -> str:
    """The node's Ready condition status ("True", "False", "Unknown"), "" when it has none."""
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status", "Unknown"))
    return ""


def pod_requests(pod: Json) -> dict[str, str]:
    """What a pod asks the scheduler for, as the scheduler counts it: its containers' requests
    summed, raised to any init container's (domain.replicas, the FeedInventory's own rule)."""
    resources = replica_requirements(pod.get("spec") or {}, "spec").resources
    return sum_resources([(resources.requests if resources else None) or {}])


def node_facts(nodes: Sequence[Json], pods: Sequence[Json]) -> list[NodeFacts]:
    by_node: dict[str, list[dict[str, str]]] = defaultdict(list)
    for pod in pods:
        node_name = pod.get("spec", {}).get("nodeName")
        if node_name and pod.get("status", {}).get("phase") not in _FINISHED:
            by_node[node_name].append({**pod_requests(pod), "pods": "1"})
    out = []
    for node in nodes:
        meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status", {})
        out.append(
            NodeFacts(
                name=meta["name"],
                ready=ready_condition(node) == "True",
                labels=dict(meta.get("labels") or {}),
                capacity=sum_resources([status.get("capacity") or {}]),
                allocatable=sum_resources([status.get("allocatable") or {}]),
                requested=sum_resources(by_node[meta["name"]]),
                taints=tuple(Taint.model_validate(t) for t in spec.get("taints") or []),
                unschedulable=bool(spec.get("unschedulable")),
            )
        )
    return out


def summarize(
    version: Json,
    health: Sequence[bool],
    nodes: Sequence[Json],
    pods: Sequence[Json],
    server: str,
    env: Mapping[str, str] | None = None,
) -> ClusterFacts:
    """`env`: the agent's environment, where the CIDRs are read when no pod names them."""
    env = env if env is not None else {}
    conditions = [ready_condition(n) for n in nodes]
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
    healthz, livez, readyz = health
    used = sum_resources(pod_requests(p) for p in running)
    return ClusterFacts(
        k8s_version=str(version.get("gitVersion", "")),
        platform=str(version.get("platform", "")),
        ready_nodes=conditions.count("True"),
        not_ready_nodes=conditions.count("False"),
        unknown_nodes=conditions.count("Unknown"),
        lost_nodes=conditions.count(""),
        capacity=sum_resources(n.get("status", {}).get("capacity") or {} for n in nodes),
        allocatable=sum_resources(n.get("status", {}).get("allocatable") or {} for n in nodes),
        cpu_usage=used.get("cpu", "0"),
        memory_usage=used.get("memory", "0"),
        running_pods=len(running),
        total_pods=len(pods),
        nodes=tuple(node_facts(nodes, pods)),
        apiserver_url=server,
        healthz=healthz,
        livez=livez,
        readyz=readyz,
        service_cidr=find_service_cidr(pods, env),
        cluster_cidr=find_cluster_cidr(pods, env),
    )


async def gather(api: KubeApi) -> ClusterFacts:
    async def items(path: str) -> list[Any]:
        return list((await api.request("GET", path)).get("items") or [])

    version, healthz, livez, readyz, nodes, pods = await asyncio.gather(
        api.request("GET", "/version"),
        api.status_code("/healthz"),
        api.status_code("/livez"),
        api.status_code("/readyz"),
        items("/api/v1/nodes"),
        items("/api/v1/pods"),
    )
    health = [code == 200 for code in (healthz, livez, readyz)]
    return summarize(version, health, nodes, pods, api.server, os.environ)

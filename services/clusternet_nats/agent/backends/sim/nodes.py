"""The sim's nodes: identical machines whose CPU, memory and pod slots workloads fill.

Allocatable equals capacity (no system reservations): the numbers users size with `--sim-nodes`,
`--sim-node-cpu` and `--sim-node-memory` are the numbers the scheduler and predictor see.
Every node carries the labels a kubelet gives its node (`kubernetes.io/hostname`, `/os`, `/arch`),
which manifests commonly select by, and pods are placed by selectors and taints as the predictor
judges them (workloads.py). `--sim-node-labels` gives node i the i-th label set (round robin),
so the heartbeat's aggregation of common `node.clusternet.io/` labels has something to aggregate, and
`--sim-node-taints` likewise gives taint sets, so the predictor has taints to judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from clusternet_nats.agent.backends.base import NodeFacts
from clusternet_nats.api.meta import Taint, TaintEffect
from clusternet_nats.api.quantity import cpu_text as cpu_text
from clusternet_nats.api.quantity import memory_text as memory_text
from clusternet_nats.api.quantity import milli_value, value

PODS_PER_NODE = 110
"""The kubelet's default --max-pods."""
OS, ARCH = "linux", "amd64"


def well_known_labels(name: str) -> dict[str, str]:
    """The labels the kubelet puts on its node."""
    return {"kubernetes.io/hostname": name, "kubernetes.io/os": OS, "kubernetes.io/arch": ARCH}


@dataclass(frozen=True)
class Node:
    name: str
    cpu: int
    """Millicores."""
    memory: int
    """Bytes."""
    pods: int = PODS_PER_NODE
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    def facts(self, cpu: int, memory: int, pods: int, owners: dict[str, int]) -> NodeFacts:
        """The node as a heartbeat reports it, with what its placed pods request and whose they are."""
        size = resources(self.cpu, self.memory, self.pods)
        requested = resources(cpu, memory, pods)
        labels = dict(self.labels)
        return NodeFacts(self.name, True, labels, size, dict(size), requested, self.taints, False, dict(owners))


@dataclass(frozen=True)
class Sizing:
    nodes: int = 3
    node_cpu: str = "4"
    node_memory: str = "8Gi"
    node_labels: tuple[dict[str, str], ...] = ()
    """Label sets given to nodes in turn (node 1 the first); empty: unlabelled nodes."""
    node_taints: tuple[tuple[Taint, ...], ...] = ()
    """Taint sets given to nodes in turn (node 1 the first); empty: untainted nodes."""

    def build(self, cluster: str) -> list[Node]:
        cpu, memory = milli_value(self.node_cpu), value(self.node_memory)
        labels, taints = self.node_labels, self.node_taints
        names = [f"{cluster}-node-{i}" for i in range(1, self.nodes + 1)]
        return [
            Node(
                names[i - 1],
                cpu,
                memory,
                labels={**well_known_labels(names[i - 1]), **(labels[(i - 1) % len(labels)] if labels else {})},
                taints=taints[(i - 1) % len(taints)] if taints else (),
            )
            for i in range(1, self.nodes + 1)
        ]


def parse_taints_cycle(text: str) -> list[tuple[Taint, ...]]:
    """`key=value:Effect,key:Effect;...` (kubectl taint's form; `;` between nodes' sets, an empty
    set leaves a node untainted). Raises ValueError naming the bad taint."""
    effects = {effect.value for effect in TaintEffect}
    out = []
    for group in text.split(";") if text else []:
        taints = []
        for item in filter(None, (part.strip() for part in group.split(","))):
            spec, _, effect = item.rpartition(":")
            key, _, taint_value = spec.partition("=")
            if not key or effect not in effects:
                known = ", ".join(sorted(effects))
                raise ValueError(f"taint {item!r}: expected key[=value]:Effect, Effect one of {known}")
            taints.append(Taint(key=key, value=taint_value or None, effect=effect))
        out.append(tuple(taints))
    return out


def resources(cpu: int, memory: int, pods: int) -> dict[str, str]:
    return {"cpu": cpu_text(cpu), "memory": memory_text(memory), "pods": str(pods)}


def total(nodes: Sequence[Node]) -> dict[str, str]:
    """Capacity (and allocatable) of the whole cluster, as a Node's status prints it."""
    return resources(sum(n.cpu for n in nodes), sum(n.memory for n in nodes), sum(n.pods for n in nodes))

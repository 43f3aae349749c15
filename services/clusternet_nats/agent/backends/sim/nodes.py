"""The sim's nodes: identical machines whose CPU, memory and pod slots workloads fill.

Allocatable equals capacity (no system reservations): the numbers users size with `--sim-nodes`,
`--sim-node-cpu` and `--sim-node-memory` are the numbers the scheduler and predictor see.
`--sim-node-labels` gives node i the i-th label set (round robin), so the heartbeat's
aggregation of common `node.clusternet.io/` labels has something to aggregate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from clusternet_nats.api.quantity import cpu_text as cpu_text
from clusternet_nats.api.quantity import memory_text as memory_text
from clusternet_nats.api.quantity import milli_value, value

PODS_PER_NODE = 110
"""The kubelet's default --max-pods."""


@dataclass(frozen=True)
class Node:
    name: str
    cpu: int
    """Millicores."""
    memory: int
    """Bytes."""
    pods: int = PODS_PER_NODE
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Sizing:
    nodes: int = 3
    node_cpu: str = "4"
    node_memory: str = "8Gi"
    node_labels: tuple[dict[str, str], ...] = ()
    """Label sets given to nodes in turn (node 1 the first); empty: unlabelled nodes."""

    def build(self, cluster: str) -> list[Node]:
        cpu, memory = milli_value(self.node_cpu), value(self.node_memory)
        cycle = self.node_labels
        return [
            Node(f"{cluster}-node-{i}", cpu, memory, labels=dict(cycle[(i - 1) % len(cycle)]) if cycle else {})
            for i in range(1, self.nodes + 1)
        ]


def resources(cpu: int, memory: int, pods: int) -> dict[str, str]:
    return {"cpu": cpu_text(cpu), "memory": memory_text(memory), "pods": str(pods)}


def total(nodes: Sequence[Node]) -> dict[str, str]:
    """Capacity (and allocatable) of the whole cluster, as a Node's status prints it."""
    return resources(sum(n.cpu for n in nodes), sum(n.memory for n in nodes), sum(n.pods for n in nodes))

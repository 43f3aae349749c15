"""The sim's nodes: identical machines whose CPU, memory and pod slots workloads fill.

Allocatable equals capacity (no system reservations): the numbers users size with `--sim-nodes`,
`--sim-node-cpu` and `--sim-node-memory` are the numbers the scheduler and predictor see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clusternet_nats.api.quantity import milli_value, value

PODS_PER_NODE = 110
"""The kubelet's default --max-pods."""
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


@dataclass(frozen=True)
class Node:
    name: str
    cpu: int
    """Millicores."""
    memory: int
    """Bytes."""
    pods: int = PODS_PER_NODE


@dataclass(frozen=True)
class Sizing:
    nodes: int = 3
    node_cpu: str = "4"
    node_memory: str = "8Gi"

    def build(self, cluster: str) -> list[Node]:
        cpu, memory = milli_value(self.node_cpu), value(self.node_memory)
        return [Node(f"{cluster}-node-{i}", cpu, memory) for i in range(1, self.nodes + 1)]


def cpu_text(millicores: int) -> str:
    """As Kubernetes prints CPU: whole cores when exact ("12"), else millicores ("1500m")."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def memory_text(size: int) -> str:
    """The largest binary suffix that divides the size exactly ("24Gi", "1536Mi", "100")."""
    for suffix, unit in _BINARY:
        if size and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def total(nodes: Sequence[Node]) -> dict[str, str]:
    """Capacity (and allocatable) of the whole cluster, as a Node's status prints it."""
    return {
        "cpu": cpu_text(sum(n.cpu for n in nodes)),
        "memory": memory_text(sum(n.memory for n in nodes)),
        "pods": str(sum(n.pods for n in nodes)),
    }

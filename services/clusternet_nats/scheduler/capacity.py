"""When a cluster's free capacity has changed enough to re-place replicas that found no room.

Agents rewrite a cluster's node inventory whenever a pod lands or leaves, so reacting to every
write would re-schedule on every rollout. Each cluster keeps the free capacity (allocatable minus
requested, over Ready nodes) it had when it last counted; a new inventory counts only when some
resource moved by more than `threshold` of that cluster's allocatable since then.
"""

from __future__ import annotations

from clusternet_nats.api.inventory import NodeInventory
from clusternet_nats.api.quantity import QuantityError, milli_value

DEFAULT_THRESHOLD = 0.1
RESOURCES = ("cpu", "memory", "pods")

Amounts = dict[str, int]


def _sum(inventory: NodeInventory, field: str) -> Amounts:
    totals = dict.fromkeys(RESOURCES, 0)
    for node in inventory.nodes:
        if not node.ready:
            continue
        amounts = getattr(node, field)
        for name in RESOURCES:
            try:
                totals[name] += milli_value(amounts.get(name, 0))
            except QuantityError:
                continue
    return totals


def free(inventory: NodeInventory) -> tuple[Amounts, Amounts]:
    """(allocatable, allocatable minus requested) per resource, in thousandths, over Ready nodes."""
    allocatable = _sum(inventory, "allocatable")
    requested = _sum(inventory, "requested")
    return allocatable, {name: allocatable[name] - requested[name] for name in RESOURCES}


class CapacityTracker:
    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._counted: dict[str, Amounts] = {}

    def changed(self, cluster: str, inventory: NodeInventory | None) -> bool:
        """Whether this inventory moved the cluster's free capacity past the threshold."""
        if inventory is None:
            return self._counted.pop(cluster, None) is not None
        allocatable, now = free(inventory)
        before = self._counted.get(cluster)
        moved = before is None or any(
            abs(now[name] - before[name]) > self.threshold * allocatable[name] for name in RESOURCES
        )
        if moved:
            self._counted[cluster] = now
        return moved

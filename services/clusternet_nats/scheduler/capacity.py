"""When a cluster's free capacity has changed enough to re-place replicas that found no room.

Agents rewrite a cluster's node inventory whenever a pod lands or leaves, so reacting to every
write would re-schedule on every rollout. Each cluster keeps the free capacity (allocatable minus
requested, over Ready nodes) it had when it last counted; a new inventory counts only when some
resource moved by more than `threshold` of that cluster's allocatable since then.

The scheduler's informer of node inventories keeps only `free(inventory)` per cluster (six
numbers), never the inventories' node lists: nothing else of them is read here.
"""

from __future__ import annotations

from clusternet_nats.api.inventory import NodeInventory
from clusternet_nats.api.quantity import QuantityError, milli_value

DEFAULT_THRESHOLD = 0.1
RESOURCES = ("cpu", "memory", "pods")

Amounts = tuple[int, int, int]
"""Per resource of RESOURCES, in that order (a tuple: kept per cluster, a dict is 4 times larger)."""
Room = tuple[Amounts, Amounts]
"""(allocatable, allocatable minus requested) of one cluster."""


def _sum(inventory: NodeInventory, field: str) -> Amounts:
    totals = [0, 0, 0]
    for node in inventory.nodes:
        if not node.ready:
            continue
        amounts = getattr(node, field)
        for i, name in enumerate(RESOURCES):
            try:
                totals[i] += milli_value(amounts.get(name, 0))
            except QuantityError:
                continue
    return totals[0], totals[1], totals[2]


def free(inventory: NodeInventory) -> Room:
    """(allocatable, allocatable minus requested) per resource, in thousandths, over Ready nodes."""
    allocatable = _sum(inventory, "allocatable")
    requested = _sum(inventory, "requested")
    cpu, memory, pods = (allocatable[i] - requested[i] for i in range(len(RESOURCES)))
    return allocatable, (cpu, memory, pods)


def room_of(_key: str, data: bytes, _revision: int) -> Room:
    """A stored node inventory's room: what the scheduler's informer keeps of it."""
    return free(NodeInventory.model_validate_json(data))


class CapacityTracker:
    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._counted: dict[str, Amounts] = {}

    def changed(self, cluster: str, room: Room | None) -> bool:
        """Whether this inventory's room (`free`; None: gone) moved the cluster's free capacity
        past the threshold."""
        if room is None:
            return self._counted.pop(cluster, None) is not None
        allocatable, now = room
        before = self._counted.get(cluster)
        moved = before is None or any(
            abs(now[i] - before[i]) > self.threshold * allocatable[i] for i in range(len(RESOURCES))
        )
        if moved:
            self._counted[cluster] = now
        return moved

"""A cluster's free capacity counts as changed only past the threshold (scheduler/capacity.py)."""

from __future__ import annotations

from clusternet_nats.api.inventory import NodeInventory, NodeInventoryItem
from clusternet_nats.scheduler.capacity import RESOURCES, CapacityTracker, free


def inventory(requested_cpu: str, ready: bool = True) -> NodeInventory:
    nodes = [
        NodeInventoryItem(
            name=f"n{i}",
            ready=ready or i == 0,
            allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"},
            requested={"cpu": requested_cpu if i == 0 else "0", "memory": "1Gi", "pods": "3"},
        )
        for i in range(2)
    ]
    return NodeInventory(cluster_id="c", nodes=nodes)


def test_free_capacity_is_allocatable_minus_requested_over_ready_nodes() -> None:
    assert RESOURCES == ("cpu", "memory", "pods")
    allocatable, left = free(inventory("1500m"))
    assert allocatable[0] == 8000 and left[0] == 6500
    assert left[1] == (16 - 2) * 2**30 * 1000 and left[2] == (220 - 6) * 1000
    allocatable, left = free(inventory("1", ready=False))
    assert (allocatable[0], left[0]) == (4000, 3000), "a NotReady node holds nothing"


def test_only_a_change_past_the_threshold_counts() -> None:
    tracker = CapacityTracker(threshold=0.1)
    assert tracker.changed("c", free(inventory("0"))), "a first report counts"
    assert not tracker.changed("c", free(inventory("500m"))), "500m of 8 cores is within 10%"
    assert not tracker.changed("c", free(inventory("800m"))), "measured from the last report that counted"
    assert tracker.changed("c", free(inventory("900m")))
    assert not tracker.changed("c", free(inventory("900m")))
    assert tracker.changed("c", None), "a cluster whose inventory is gone"
    assert not tracker.changed("c", None)

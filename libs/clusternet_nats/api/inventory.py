"""Each child cluster's nodes as the predictor needs them, in the `node-inventories` bucket.

ManagedCluster status carries only cluster-wide sums (capacity, allocatable), and a sum cannot say
whether one replica of 3 CPUs fits when three nodes have 2 free each. Clusternet's predictor asks
the child's API server for its nodes; ours reads this record instead, written by the agent beside
its heartbeat under the ManagedCluster's key (`<dedicated namespace>.<name>`), and only when it
changed, so a quiet cluster costs the hub no writes.

Per node it holds what a fit needs, as a kube-scheduler would read it: labels (nodeSelector and
required node affinity), taints (tolerations), whether it is cordoned, allocatable and what its
pods request, `pods` included on both sides (pod slots: allocatable `pods` is the capacity,
requested `pods` the count of pods placed), and how many of those pods each Description's
workloads own (`podsByDescription`), so the predictor can tell which bound replicas the
inventory already counts and reserve exactly the rest (predictor/reservations.py).
"""

from __future__ import annotations

from clusternet_nats.api.meta import Model, Quantity, Taint
from clusternet_nats.api.schemas import register_message
from pydantic import Field

NODE_INVENTORIES_BUCKET = "node-inventories"


class NodeInventoryItem(Model):
    name: str
    ready: bool = True
    labels: dict[str, str] = Field(default_factory=dict)
    capacity: dict[str, Quantity] = Field(default_factory=dict)
    allocatable: dict[str, Quantity] = Field(default_factory=dict)
    requested: dict[str, Quantity] = Field(default_factory=dict)
    """What the pods placed on the node request (`pods`: how many); allocatable minus this is free."""
    pods_by_description: dict[str, int] | None = None
    """Of the pods counted in `requested`, how many each Description (its key, `<namespace>.<name>`,
    the owner the agent applied them for) owns; None from an agent that does not count them."""
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False
    """Cordoned (`spec.unschedulable`): as Kubernetes, only pods tolerating
    `node.kubernetes.io/unschedulable:NoSchedule` may land."""


class NodeInventory(Model):
    cluster_id: str
    nodes: list[NodeInventoryItem] = Field(default_factory=list)


register_message(NodeInventory, "clusters.clusternet.io", "v1beta1")

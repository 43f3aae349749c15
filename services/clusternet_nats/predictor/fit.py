"""How many replicas of a requirement fit a cluster, node by node, as Clusternet's predictor counts.

Clusternet's predictor (pkg/predictor: server.go MaxAcceptableReplicas and its default plugins)
lists the nodes the requirement's nodeSelector matches, drops those with a NoSchedule/NoExecute
taint it does not tolerate (TaintToleration), and on each node left divides what is free
(allocatable minus what its unfinished pods request, pod slots included) by one replica's
requests (DefaultComputer, MaxReplicaDivided: the scarcest resource, CPU in millicores and the
rest in units, each rounded up as apimachinery does); the cluster's answer is the sum
(DefaultAggregator). No node left is an error ("no feasible nodes found"). So three nodes with
2 free CPUs each fit no replica of 3 CPUs and three of 1500m.

Beyond Clusternet, as a kube-scheduler would also judge the node: the required node affinity
(nodeSelectorTerms, ORed; matchFields on `metadata.name`), and a cordoned or not-Ready node
counts as carrying the taint Kubernetes gives it (`node.kubernetes.io/unschedulable`,
`node.kubernetes.io/not-ready`, NoSchedule), so only a requirement tolerating it lands there.
Where Clusternet fails the whole prediction because a node is overcommitted (requested above
allocatable), that node offers nothing and the others still count.

The two node filters (selector and affinity, taints) are domain/nodefit.py's, the rule the
simulated clusters also place pods by. Replicas already bound to a cluster but not counted by its
inventory yet (reservations.py) are placed first (`reserve`), first fit, so a second Subscription
scheduled right after the first does not count the same room.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from clusternet_nats.api.inventory import NodeInventory
from clusternet_nats.api.meta import Taint, TaintEffect
from clusternet_nats.api.quantity import QuantityError
from clusternet_nats.domain.nodefit import PODS, Demand, amount, selects, untolerated_taint

MAX_REPLICAS = 2**31 - 1
"""The answer when nothing bounds the count (Clusternet's math.MaxInt32)."""
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect=TaintEffect.NO_SCHEDULE)
NOT_READY_TAINT = Taint(key="node.kubernetes.io/not-ready", effect=TaintEffect.NO_SCHEDULE)


class NoFeasibleNodes(LookupError):
    """Clusternet's "no feasible nodes found", with why each node was left out."""


@dataclass(slots=True)
class NodeRoom:
    """One node as a fit sees it: what selects it, what repels, and what is still free."""

    name: str
    labels: Mapping[str, str]
    taints: Sequence[Taint]
    free: dict[str, int] = field(default_factory=dict)
    """Allocatable minus requested, per resource (`pods`: free slots); absent `pods`: no cap."""

    def copy(self) -> NodeRoom:
        return NodeRoom(self.name, self.labels, self.taints, dict(self.free))


@dataclass(frozen=True, slots=True)
class ClusterNodes:
    """What the predictor keeps of a cluster's node inventory: its nodes as fits see them (the
    inventory's quantities parsed once, on arrival) and its pods per Description summed over
    the nodes; not the inventory itself."""

    cluster_id: str
    nodes: tuple[NodeRoom, ...]
    pods_by_description: dict[str, int] | None
    """None when some node does not count its pods per Description."""
    invalid: str | None = None
    """Why the inventory's quantities could not be read (then `nodes` is empty)."""

    @classmethod
    def of(cls, inventory: NodeInventory) -> ClusterNodes:
        counted: dict[str, int] | None = {}
        for node in inventory.nodes:
            if node.pods_by_description is None or counted is None:
                counted = None
                continue
            for key, pods in node.pods_by_description.items():
                counted[key] = counted.get(key, 0) + pods
        try:
            nodes = tuple(rooms(inventory))
        except QuantityError as err:
            return cls(inventory.cluster_id, (), counted, str(err))
        return cls(inventory.cluster_id, nodes, counted)


def cluster_nodes(_key: str, data: bytes, _revision: int) -> ClusterNodes:
    """A stored node inventory as the predictor's informer keeps it."""
    return ClusterNodes.of(NodeInventory.model_validate_json(data))


def rooms(inventory: NodeInventory) -> list[NodeRoom]:
    """Every node of a cluster's inventory with its free resources. Raises QuantityError."""
    out = []
    for node in inventory.nodes:
        taints = list(node.taints)
        if node.unschedulable:
            taints.append(UNSCHEDULABLE_TAINT)
        if not node.ready:
            taints.append(NOT_READY_TAINT)
        requested = {name: amount(name, q) for name, q in node.requested.items()}
        free = {name: amount(name, q) - requested.get(name, 0) for name, q in node.allocatable.items()}
        out.append(NodeRoom(node.name, node.labels, taints, free))
    return out


def replicas_on(demand: Demand, free: Mapping[str, int]) -> int:
    """Clusternet's MaxReplicaDivided over what is free on one node: the scarcest resource, and
    the free pod slots; a requested resource the node lacks fits zero times."""
    fits = MAX_REPLICAS
    for name, needed in demand.requests:
        fits = min(fits, free.get(name, 0) // needed)
    if PODS in free:
        fits = min(fits, free[PODS])
    return max(fits, 0)


def feasible(demand: Demand, nodes: Sequence[NodeRoom]) -> list[NodeRoom]:
    """The nodes a replica may land on; raises NoFeasibleNodes saying why none may."""
    chosen, reasons = [], Counter[str]()
    for node in nodes:
        taint = untolerated_taint(demand, node)
        if not selects(demand, node):
            reasons["node(s) didn't match the node selector or required node affinity"] += 1
        elif taint is not None:
            reasons[f"node(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"] += 1
        else:
            chosen.append(node)
    if not chosen:
        why = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        detail = f": {why}" if why else ""
        raise NoFeasibleNodes(f"no feasible nodes found: 0/{len(nodes)} nodes are available{detail}")
    return chosen


def max_acceptable_replicas(demand: Demand, nodes: Sequence[NodeRoom]) -> int:
    """The replicas of `demand` the nodes can take, each counted on one node, summed (capped at
    MAX_REPLICAS as Clusternet's int32). Raises NoFeasibleNodes."""
    return min(sum(replicas_on(demand, node.free) for node in feasible(demand, nodes)), MAX_REPLICAS)


def reserve(demand: Demand, count: int, nodes: Sequence[NodeRoom]) -> int:
    """Takes room for `count` replicas from the nodes (first fit, in place); returns how many
    found none."""
    try:
        candidates = feasible(demand, nodes)
    except NoFeasibleNodes:
        return count
    for node in candidates:
        if count <= 0:
            break
        placed = min(count, replicas_on(demand, node.free))
        for name, needed in demand.requests:
            node.free[name] = node.free.get(name, 0) - placed * needed
        if PODS in node.free:
            node.free[PODS] -= placed
        count -= placed
    return count

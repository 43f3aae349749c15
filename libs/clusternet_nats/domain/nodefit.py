"""Whether a pod may land on a node, as kube-scheduler's filters and Clusternet's predictor judge it.

One rule for both sides of capacity-aware scheduling: the predictor counts a replica's room only
on the nodes it admits (predictor/fit.py), and the simulated clusters place pods only there
(agent/backends/sim/workloads.py), so the room predicted is the room the pods find. A node is
admitted when the replica's nodeSelector and required node affinity (nodeSelectorTerms, ORed;
matchFields on `metadata.name`) hold for its labels, and it carries no NoSchedule/NoExecute taint
the replica does not tolerate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from clusternet_nats.api.apps import ReplicaRequirements
from clusternet_nats.api.meta import NodeSelectorTerm, Taint, TaintEffect, Toleration
from clusternet_nats.api.quantity import QuantityError, milli_value, value
from clusternet_nats.domain.selectors import term_matches
from pydantic import TypeAdapter, ValidationError

PODS = "pods"
_FILTERED_EFFECTS = (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)
_TERMS = TypeAdapter(list[NodeSelectorTerm])


class Node(Protocol):
    """What admitting a pod reads of a node."""

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def taints(self) -> Sequence[Taint]: ...


class RequirementError(ValueError):
    """A requirement that cannot be read (a bad quantity, a malformed affinity); names the field."""


def amount(resource: str, quantity: str | int) -> int:
    """A quantity as the predictor divides it: CPU in millicores, anything else in units."""
    return milli_value(quantity) if resource == "cpu" else value(quantity)


@dataclass(frozen=True, eq=False)
class Demand:
    """One replica's requirements, parsed once; equal and hashed by what it asks (the predictor
    caches answers by it), since tolerations and terms are models, which do not hash."""

    requests: tuple[tuple[str, int], ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    terms: tuple[NodeSelectorTerm, ...] | None = None
    """Required node affinity's terms (any one must match); None: no required affinity."""

    @cached_property
    def signature(self) -> str:
        models = [t.to_json_dict() for t in self.tolerations], [t.to_json_dict() for t in self.terms or ()]
        return json.dumps([self.requests, self.node_selector, *models, self.terms is None], sort_keys=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Demand) and self.signature == other.signature

    def __hash__(self) -> int:
        return hash(self.signature)

    @classmethod
    def of(cls, requirements: ReplicaRequirements) -> Demand:
        requests = (requirements.resources.requests if requirements.resources else None) or {}
        parsed: list[tuple[str, int]] = []
        for name, quantity in sorted(requests.items()):
            try:
                needed = amount(name, quantity)
            except QuantityError as err:
                raise RequirementError(f"resources.requests.{name}: {err}") from err
            if needed > 0 and name != PODS:
                parsed.append((name, needed))
        return cls(
            requests=tuple(parsed),
            node_selector=tuple(sorted((requirements.node_selector or {}).items())),
            tolerations=tuple(requirements.tolerations or ()),
            terms=_required_terms(requirements.affinity),
        )


def _required_terms(affinity: Mapping[str, Any] | None) -> tuple[NodeSelectorTerm, ...] | None:
    node_affinity = (affinity or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if node_affinity else None
    if required is None:
        return None
    where = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    try:
        return tuple(_TERMS.validate_python(required.get("nodeSelectorTerms") or []))
    except (ValidationError, AttributeError) as err:
        raise RequirementError(f"{where}: {err}") from err


def untolerated_taint(demand: Demand, node: Node) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration of the demand tolerates."""
    for taint in node.taints:
        if taint.effect in _FILTERED_EFFECTS and not any(t.tolerates(taint) for t in demand.tolerations):
            return taint
    return None


def selects(demand: Demand, node: Node) -> bool:
    """nodeSelector and required node affinity both hold for the node's labels."""
    if any(node.labels.get(key) != wanted for key, wanted in demand.node_selector):
        return False
    if demand.terms is None:
        return True
    fields = {"metadata.name": node.name}
    return any(term_matches(term, node.labels, fields) for term in demand.terms)


def admits(demand: Demand, node: Node) -> bool:
    """The node passes both filters: selected, and every repelling taint tolerated."""
    return selects(demand, node) and untolerated_taint(demand, node) is None

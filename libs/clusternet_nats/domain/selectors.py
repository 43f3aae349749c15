"""Kubernetes node-selector terms (In, NotIn, Exists, DoesNotExist, Gt, Lt) over a label set.

The scheduler matches a Subscription's `preferredClusters` terms against cluster labels with it;
the same rule matches a replica's required node affinity against node labels.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusternet_nats.api.meta import NodeSelectorRequirement, NodeSelectorTerm


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def requirement_matches(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """Kubernetes' semantics: an unknown operator or a malformed Gt/Lt value matches nothing."""
    values = req.values or []
    present = req.key in labels
    match req.operator:
        case "In":
            return present and labels[req.key] in values
        case "NotIn":
            return not present or labels[req.key] not in values
        case "Exists":
            return present
        case "DoesNotExist":
            return not present
        case "Gt" | "Lt":
            if not present or len(values) != 1:
                return False
            have, bound = _as_int(labels[req.key]), _as_int(values[0])
            if have is None or bound is None:
                return False
            return have > bound if req.operator == "Gt" else have < bound
    return False


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], fields: Mapping[str, str] | None = None) -> bool:
    """All expressions and fields of the term hold; a term with neither matches nothing (as Kubernetes)."""
    expressions = term.match_expressions or []
    field_reqs = term.match_fields or []
    if not expressions and not field_reqs:
        return False
    return all(requirement_matches(r, labels) for r in expressions) and all(
        requirement_matches(r, fields or {}) for r in field_reqs
    )

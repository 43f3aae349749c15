"""`?labelSelector=` and `?fieldSelector=` as kube-apiserver reads them.

Label selectors become the same LabelSelector model Subscriptions use, so one `matches` decides
both what a list returns and which clusters a Subscription selects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from clusternet_nats.api import KubeObject, LabelSelector
from clusternet_nats.api.meta import LabelSelectorRequirement, SelectorOperator
from clusternet_nats.hub.errors import bad_request

_TERMS = re.compile(r",(?![^()]*\))")  # commas outside "in (a,b)"
_SET = re.compile(r"^(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s+\((?P<values>[^()]*)\)$")
_EQUALITY = re.compile(r"^(?P<key>[^\s!=()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=()]*)$")
_EXISTS = re.compile(r"^(?P<neg>!?)\s*(?P<key>[^\s!=()]+)$")
_FIELD = re.compile(r"^(?P<key>[^\s!=]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=]*)$")
OBJECT_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
"""The fields every kind may be selected by, as for custom resources on kube-apiserver."""


def _requirement(term: str) -> tuple[str, str] | LabelSelectorRequirement:
    """One term: a (key, value) equality, or a requirement."""
    if m := _SET.match(term):
        values = [v.strip() for v in m["values"].split(",") if v.strip()]
        op = SelectorOperator.IN if m["op"] == "in" else SelectorOperator.NOT_IN
        return LabelSelectorRequirement(key=m["key"], operator=op, values=values)
    if m := _EQUALITY.match(term):
        if m["op"] == "!=":
            return LabelSelectorRequirement(key=m["key"], operator=SelectorOperator.NOT_IN, values=[m["value"]])
        return m["key"], m["value"]
    if m := _EXISTS.match(term):
        op = SelectorOperator.DOES_NOT_EXIST if m["neg"] else SelectorOperator.EXISTS
        return LabelSelectorRequirement(key=m["key"], operator=op)
    raise ValueError(f"cannot parse {term!r}: expected key=value, key!=value, key, !key or key in (a,b)")


def parse_label_selector(text: str) -> LabelSelector:
    """`a=b,c!=d,e,!f,g in (x,y)`; raises ValueError naming the term it cannot read."""
    match_labels: dict[str, str] = {}
    expressions: list[LabelSelectorRequirement] = []
    for term in (t.strip() for t in _TERMS.split(text)):
        if not term:
            continue
        parsed = _requirement(term)
        if isinstance(parsed, LabelSelectorRequirement):
            expressions.append(parsed)
        else:
            match_labels[parsed[0]] = parsed[1]
    return LabelSelector(match_labels=match_labels or None, match_expressions=expressions or None)


def _field_terms(text: str, allowed: frozenset[str]) -> list[tuple[str, bool, str]]:
    """(field, equal, value) per term; raises ValueError naming a term or field it cannot use."""
    terms = []
    for term in (t.strip() for t in text.split(",")):
        if not term:
            continue
        m = _FIELD.match(term)
        if m is None:
            raise ValueError(f"cannot parse {term!r}: expected field=value or field!=value")
        if m["key"] not in allowed:
            raise ValueError(f"field label not supported: {m['key']} (supported: {', '.join(sorted(allowed))})")
        terms.append((m["key"], m["op"] != "!=", m["value"]))
    return terms


def parse_field_selector(text: str, allowed: frozenset[str]) -> dict[str, str]:
    """`field=value,...` equalities over the allowed fields; raises ValueError otherwise."""
    fields: dict[str, str] = {}
    for field, equal, value in _field_terms(text, allowed):
        if not equal:
            raise ValueError(f"cannot use {field}!={value}: only field=value is supported here")
        fields[field] = value
    return fields


@dataclass(frozen=True)
class ObjectSelector:
    """What `?labelSelector=` and `?fieldSelector=` (metadata.name, metadata.namespace) keep."""

    labels: LabelSelector
    fields: tuple[tuple[str, bool, str], ...]

    @property
    def name(self) -> str | None:
        """The one name `metadata.name=X` selects (a watch on a single object), if any."""
        return next((value for field, equal, value in self.fields if field == "metadata.name" and equal), None)

    def matches(self, obj: KubeObject) -> bool:
        values = {"metadata.name": obj.name, "metadata.namespace": obj.metadata.namespace or ""}
        fields_match = all((values[field] == value) == equal for field, equal, value in self.fields)
        return fields_match and self.labels.matches(obj.metadata.labels or {})


def object_selector(query: Mapping[str, str]) -> ObjectSelector:
    """The selector a list or watch request asks for, or a 400 naming the parameter it cannot read."""
    try:
        labels = parse_label_selector(query.get("labelSelector", ""))
    except ValueError as err:
        raise bad_request(str(err), "labelSelector") from None
    try:
        fields = _field_terms(query.get("fieldSelector", ""), OBJECT_FIELDS)
    except ValueError as err:
        raise bad_request(str(err), "fieldSelector") from None
    return ObjectSelector(labels, tuple(fields))

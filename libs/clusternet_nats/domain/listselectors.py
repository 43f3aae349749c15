"""`?labelSelector=` and `?fieldSelector=` text as kube-apiserver reads it.

Label selectors become the same LabelSelector model Subscriptions use, so one `matches` decides
what a list returns, which clusters a Subscription selects and what a simulated cluster's API
server lists; the hub and the sim's API server both parse with these.
"""

from __future__ import annotations

import re

from clusternet_nats.api import LabelSelector
from clusternet_nats.api.meta import LabelSelectorRequirement, SelectorOperator

_TERMS = re.compile(r",(?![^()]*\))")  # commas outside "in (a,b)"
_SET = re.compile(r"^(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s+\((?P<values>[^()]*)\)$")
_EQUALITY = re.compile(r"^(?P<key>[^\s!=()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=()]*)$")
_EXISTS = re.compile(r"^(?P<neg>!?)\s*(?P<key>[^\s!=()]+)$")
_FIELD = re.compile(r"^(?P<key>[^\s!=]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=]*)$")


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


def field_terms(text: str, allowed: frozenset[str]) -> list[tuple[str, bool, str]]:
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

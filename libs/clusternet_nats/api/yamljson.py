"""The one reader of user YAML and JSON: text in, JSON-compatible data out.

Every parse of what a user wrote goes through here: `cnet apply` files, hub request bodies,
Localization/Globalization override values and the YAML or JSON fields they patch, the cnet
config. The rules are Kubernetes' (kubectl, sigs.k8s.io/yaml): YAML is read as JSON would
hold it, so what goes in comes back out unchanged.

* Timestamps stay strings exactly as written (`when: 2024-01-02` is the string "2024-01-02",
  not a date that later fails to serialize or comes back as "2024-01-02T00:00:00").
* Mapping keys that YAML reads as numbers, booleans or null become their JSON text
  (`1: a` is {"1": "a"}), as sigs.k8s.io/yaml does; anything else JSON cannot hold (`!!binary`,
  `!!set`, `.nan`, a recursive alias) is refused with the path to it.
* Input is UTF-8; anything else is refused, not guessed.

Limits live here and only here, so a hardening pass has one place to tighten them: MAX_DEPTH
(nesting; deeper input would otherwise end in a RecursionError) and MAX_NODES (values after
expanding aliases, so a "billion laughs" document is refused before it is built). Every refusal
is a DecodeError (a ValueError) naming the document, line and column where known.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, cast

import yaml
from yaml.error import Mark, MarkedYAMLError

MAX_DEPTH = 100
"""Nesting of mappings and sequences; Kubernetes objects, CRD schemas included, stay far below."""

MAX_NODES = 1_000_000
"""Values in one text, an alias counting as every value it stands for."""

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MAX_INT_BITS = 14_000
"""About Python's 4300 decimal digits: a larger integer could be read (from hex) but never written as JSON."""
_SURROGATE = re.compile("[\ud800-\udfff]")
"""JSON's `\\ud800` escapes decode to code points UTF-8 cannot encode: such a value could never be stored."""


class DecodeError(ValueError):
    """Input that is not YAML/JSON, not JSON-compatible, or over a limit."""

    def __init__(self, message: str, document: int | None = None) -> None:
        super().__init__(message)
        self.document = document


class _Refused(MarkedYAMLError):
    """Well-formed YAML that we do not take: over a limit, or with no JSON form."""

    def __init__(self, problem: str, mark: Mark | None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with Kubernetes' reading of scalars and a count of what aliases cost."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0
        self._nodes = 0
        self._weights: dict[int, int] = {}
        """Values each finished anchored node stands for, by id(node); only anchored ones are aliased."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        mark = cast(Mark | None, event.start_mark)
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)  # refuses an undefined alias
            weight = self._weights.get(id(node))
            if weight is None:
                raise _Refused(f"alias {event.anchor!r} refers to a node that contains it", mark)
            self._count(weight, mark)
            return node
        if self._depth > MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels", mark)
        before = self._nodes
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._count(1, mark)
        if getattr(event, "anchor", None) is not None:
            self._weights[id(node)] = self._nodes - before
        return node

    def _count(self, nodes: int, mark: Mark | None) -> None:
        self._nodes += nodes
        if self._nodes > MAX_NODES:
            raise _Refused(f"more than {MAX_NODES} values once aliases are expanded", mark)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Keys as their JSON text (sigs.k8s.io/yaml): `1: a` and `true: b` stay two keys."""
        self.flatten_mapping(node)  # merge keys (<<)
        mapping: dict[Any, Any] = {}
        for (key_node, _), (key, value) in zip(node.value, self.construct_pairs(node, deep=deep), strict=True):
            if isinstance(key, str):
                mapping[key] = value
            elif key is None or isinstance(key, bool | int | float):
                mapping[json.dumps(key)] = value
            else:
                raise _Refused(f"a {type(key).__name__} cannot be a JSON object key", key_node.start_mark)
        return mapping


# Timestamps are strings: no implicit resolving to a date, and an explicit !!timestamp is its text.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _as_written(loader: _Loader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


_Loader.add_constructor(_TIMESTAMP_TAG, _as_written)


def _text(data: str | bytes, what: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DecodeError(f"{what} is not UTF-8: byte {err.start} is {data[err.start : err.start + 1]!r}") from None


def _yaml_error(err: yaml.YAMLError, document: int) -> DecodeError:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    what = "YAML" if isinstance(err, _Refused) else "malformed YAML"
    return DecodeError(f"{what}{at}: {problem}", document)


class _TooDeep(Exception):
    pass


class _NoJsonForm(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.path = ""

    def within(self, segment: str) -> _NoJsonForm:
        self.path = segment + ("" if not self.path or self.path.startswith("[") else ".") + self.path
        return self


def _copy(value: Any, depth: int = 0) -> Any:
    """A fresh tree (an alias's value is not shared with its anchor's) of JSON's types only."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if _SURROGATE.search(key):
                raise _NoJsonForm(f"the key {key!r} is not Unicode text (a lone surrogate)")
            try:
                out[key] = _copy(item, depth + 1)
            except _NoJsonForm as err:
                raise err.within(key) from None
        return out
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_copy(item, depth + 1))
            except _NoJsonForm as err:
                raise err.within(f"[{index}]") from None
        return items
    if isinstance(value, str) and _SURROGATE.search(value):
        raise _NoJsonForm(f"{value[:40]!r} is not Unicode text (a lone surrogate, which UTF-8 cannot hold)")
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:  # e.g. YAML's 0x followed by 5000 digits
        raise _NoJsonForm(f"an integer of {value.bit_length()} bits has no JSON form here")
    if value is None or isinstance(value, str | bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise _NoJsonForm(f"{value!r} ({type(value).__name__}) has no JSON form")


def _jsonable(value: Any, document: int) -> Any:
    try:
        return _copy(value)
    except _TooDeep:
        raise DecodeError(f"nested deeper than {MAX_DEPTH} levels", document) from None
    except _NoJsonForm as err:
        raise DecodeError(f"{err.path}: {err.reason}" if err.path else err.reason, document) from None


def bounded(value: Any) -> Any:
    """`value` (already parsed elsewhere, e.g. an apiserver's JSON) held to the same limits and
    JSON-only types as what this module reads: a fresh copy, or DecodeError."""
    return _jsonable(value, 1)


def load_yaml_documents(data: str | bytes) -> list[Any]:
    """Every document of a YAML stream (JSON is YAML), None for an empty one; numbered from 1 in errors."""
    docs: list[Any] = []
    try:
        for doc in yaml.load_all(_text(data, "YAML"), Loader=_Loader):
            docs.append(doc)
    except yaml.YAMLError as err:
        raise _yaml_error(err, len(docs) + 1) from None
    except ValueError as err:  # a scalar Python will not convert (an integer of over 4300 digits)
        raise DecodeError(f"YAML: {err}", len(docs) + 1) from None
    return [_jsonable(doc, index) for index, doc in enumerate(docs, start=1)]


def load_yaml(data: str | bytes) -> Any:
    """One YAML (or JSON) document; None when empty. More than one document is an error."""
    try:
        doc = yaml.load(_text(data, "YAML"), Loader=_Loader)
    except yaml.YAMLError as err:
        raise _yaml_error(err, 1) from None
    except ValueError as err:
        raise DecodeError(f"YAML: {err}", 1) from None
    return _jsonable(doc, 1)


def load_json(data: str | bytes) -> Any:
    """One JSON document, under the same limits and rules as YAML."""
    text = _text(data, "JSON")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise DecodeError(f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}", 1) from None
    except RecursionError:
        raise DecodeError(f"nested deeper than {MAX_DEPTH} levels", 1) from None
    except ValueError as err:  # an integer of over 4300 digits
        raise DecodeError(f"JSON: {err}", 1) from None
    return _jsonable(doc, 1)


__all__ = ["MAX_DEPTH", "MAX_NODES", "DecodeError", "bounded", "load_json", "load_yaml", "load_yaml_documents"]

"""`-o jsonpath=` and `-o custom-columns=`: kubectl's template layer over jsonpath-ng.

What users type is kubectl's template (`{.items[*].metadata.name}`, `{range .items[*]}...{end}`,
`{"\\n"}`), not bare JSONPath: the braces, `range`/`end`, string literals and the text between
them are kubectl's, and each expression inside is handed to jsonpath-ng's extended parser (filters
such as `[?(@.type=="Ready")]`). As `kubectl get` does, a missing key prints nothing rather than
failing, several results of one expression are joined by spaces, and maps and lists print as JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from clusternet_nats.cli.printers import render_table
from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JSONPathError
from jsonpath_ng.ext.parser import parse


class TemplateError(ValueError):
    """A template or column spec that cannot be read; the message names it and why."""


@dataclass
class _Range:
    path: JSONPath
    body: list[_Node] = field(default_factory=list)


_Node = str | JSONPath | _Range
"""Literal text, an expression, or a range over an expression's results."""

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_LITERAL = re.compile(r"""^(["'])(.*)\1$""", re.S)


def _path(expression: str, template: str) -> JSONPath:
    """jsonpath-ng's path for one kubectl expression: `.a.b`, `$.a`, `@.a`, `.items[*]`, `.` alone."""
    text = expression.strip()
    if text in ("", ".", "$", "@"):
        return parse("$")
    if text.startswith(("$", "@")):
        text = text[1:]
    text = text.removeprefix(".")
    text = re.sub(r"((?:[^.\[\]\\]|\\.)+)", _quote_escaped, text)
    try:
        return parse(text)
    except JSONPathError as err:
        raise TemplateError(f"error parsing jsonpath {template}: cannot read {{{expression}}}: {err}") from None


def _quote_escaped(match: re.Match[str]) -> str:
    """kubectl's `labels.app\\.kubernetes\\.io/name`: a field with escaped dots, quoted for jsonpath-ng."""
    segment = match.group(1)
    if "\\." not in segment and "/" not in segment:
        return segment
    return "'" + segment.replace("\\.", ".") + "'"


def _tokens(template: str) -> list[tuple[bool, str]]:
    """(is an expression, text) pieces; braces inside string literals do not count."""
    pieces: list[tuple[bool, str]] = []
    i = 0
    while i < len(template):
        start = template.find("{", i)
        if start < 0:
            pieces.append((False, template[i:]))
            break
        if start > i:
            pieces.append((False, template[i:start]))
        j, quote = start + 1, ""
        while j < len(template) and (quote or template[j] != "}"):
            char = template[j]
            if quote and char == "\\":
                j += 1
            elif char in "\"'" and (not quote or char == quote):
                quote = "" if quote else char
            j += 1
        if j >= len(template):
            raise TemplateError(f"error parsing jsonpath {template}: unclosed action")
        pieces.append((True, template[start + 1 : j]))
        i = j + 1
    return pieces


def compile_template(template: str) -> list[_Node]:
    """The template's nodes; raises TemplateError naming the template when it cannot be read."""
    root: list[_Node] = []
    stack: list[list[_Node]] = [root]
    for is_expression, text in _tokens(template):
        if not is_expression:
            stack[-1].append(text)
            continue
        word = text.strip()
        literal = _LITERAL.match(word)
        if literal:
            stack[-1].append(re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), literal.group(2)))
        elif word.startswith("range "):
            loop = _Range(_path(word.removeprefix("range "), template))
            stack[-1].append(loop)
            stack.append(loop.body)
        elif word == "end":
            if len(stack) == 1:
                raise TemplateError(f"error parsing jsonpath {template}: {{end}} without {{range}}")
            stack.pop()
        else:
            stack[-1].append(_path(word, template))
    if len(stack) > 1:
        raise TemplateError(f"error parsing jsonpath {template}: {{range}} without {{end}}")
    return root


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)


def _values(path: JSONPath, data: Any) -> list[Any]:
    return [match.value for match in path.find(data)]


def _execute(nodes: list[_Node], data: Any) -> str:
    out: list[str] = []
    for node in nodes:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, _Range):
            out.extend(_execute(node.body, item) for item in _values(node.path, data))
        else:
            out.append(" ".join(_text(v) for v in _values(node, data)))
    return "".join(out)


def jsonpath(template: str, data: Any) -> str:
    """kubectl's `-o jsonpath=TEMPLATE` of data (one object, or a List of them)."""
    return _execute(compile_template(template), data)


def custom_columns(spec: str, objects: list[dict[str, Any]]) -> str:
    """kubectl's `-o custom-columns=HEADER:.path,...`: one row per object, `<none>` where a path finds
    nothing, several values joined by commas."""
    columns: list[tuple[str, JSONPath]] = []
    for part in spec.split(","):
        header, sep, expression = part.partition(":")
        if not sep or not header or not expression:
            raise TemplateError(
                f"custom-columns format specified but no custom columns given: {part!r} is not HEADER:JSONPATH"
            )
        expression = expression.strip()
        if expression.startswith("{") and expression.endswith("}"):
            expression = expression[1:-1]
        columns.append((header, _path(expression, spec)))
    rows = []
    for obj in objects:
        cells = []
        for _, path in columns:
            values = _values(path, obj)
            cells.append(",".join(_text(v) for v in values) if values else "<none>")
        rows.append(cells)
    return render_table([h for h, _ in columns], rows)

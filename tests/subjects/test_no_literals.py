"""No subject is spelled outside api/subjects.py: a NATS call whose subject is a string literal or
an f-string fails here, so a new subject has to go through the table (and its grants)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALLS = {"subscribe", "publish", "request", "pull_subscribe"}
NATS_RECEIVER = re.compile(r"(^|_)(nc|js)$")
"""`nc`, `js`, `self.nc`, `ctx.js`, `system_nc`, ...: a NATS connection or JetStream context."""


def _subject(call: ast.Call) -> ast.expr | None:
    """The subject argument of a NATS call, or None when `call` is not one."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "request_cluster":  # (nc, namespace, subject, ...)
        return call.args[2] if len(call.args) > 2 else None
    if not isinstance(func, ast.Attribute) or func.attr not in CALLS:
        return None
    receiver = func.value.attr if isinstance(func.value, ast.Attribute) else getattr(func.value, "id", "")
    if not NATS_RECEIVER.search(receiver):
        return None
    return call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "subject"), None)


def nats_calls(source: str) -> list[tuple[int, ast.expr]]:
    """(line, subject argument) of each NATS call in `source`."""
    calls = [(node.lineno, _subject(node)) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)]
    return [(line, subject) for line, subject in calls if subject is not None]


def literal_subjects(source: str) -> list[tuple[int, str]]:
    """(line, text) of each NATS call in `source` whose subject is spelled in place."""
    return [
        (line, ast.unparse(subject))
        for line, subject in nats_calls(source)
        if isinstance(subject, ast.Constant | ast.JoinedStr)
    ]


def test_the_scan_finds_a_literal_subject() -> None:
    assert literal_subjects('await self.nc.subscribe("clusternet.foo.>", cb=x)') == [(1, "'clusternet.foo.>'")]
    assert literal_subjects('await js.publish(f"events.{kind}", b"")') == [(1, "f'events.{kind}'")]
    assert literal_subjects('await request_cluster(nc, ns, f"clusternet.x.{ns}", b"", 1)') == [
        (1, "f'clusternet.x.{ns}'")
    ]
    assert literal_subjects("await nc.subscribe(PREDICTOR.filter(), queue=Q)") == []
    assert literal_subjects('await client.request("GET", "/version")') == []  # HTTP, not NATS


def test_no_subject_is_spelled_outside_the_registry() -> None:
    sources = {path: path.read_text() for top in ("libs", "services") for path in sorted((ROOT / top).rglob("*.py"))}
    assert sum(len(nats_calls(source)) for source in sources.values()) >= 10, "the scan sees the code's NATS calls"
    offenders = {
        f"{path.relative_to(ROOT)}:{line}": text
        for path, source in sources.items()
        for line, text in literal_subjects(source)
    }
    assert offenders == {}, "build subjects from libs/clusternet_nats/api/subjects.py"

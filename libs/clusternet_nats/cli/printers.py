"""kubectl's look: aligned columns, human ages, YAML and JSON as `-o yaml|json` prints them.

Tables are plain text padded like kubectl's tabwriter (cells at least 10 wide, 3 spaces apart)
rather than rich tables, so output is stable in pipes and scripts (`cnet get subs | awk ...`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import yaml

_MIN_CELL = 10
_PADDING = 3


def human_duration(seconds: float) -> str:
    """apimachinery's HumanDuration: `45s`, `3m20s`, `2h`, `4d`, `2y30d`."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def age(timestamp: Any, now: datetime | None = None) -> str:
    """Age of an RFC 3339 timestamp, `<unknown>` when there is none."""
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return human_duration(((now or datetime.now(UTC)) - then).total_seconds())


def render_table(headers: list[str], rows: list[list[str]], indent: str = "") -> str:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in [headers, *rows]:
        cells = [cell.ljust(max(width + _PADDING, _MIN_CELL)) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append((indent + "".join(cells) + row[-1]).rstrip())
    return "\n".join(lines)


def to_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=4, ensure_ascii=False)


def as_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Several objects as kubectl prints them together."""
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}

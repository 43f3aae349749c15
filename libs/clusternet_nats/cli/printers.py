"""kubectl's look: aligned columns, human ages, YAML and JSON as `-o yaml|json` prints them.

Tables are plain text padded like kubectl's tabwriter (printers.GetNewTabWriter: cells
max(width + 3, 6) wide), byte for byte what `kubectl get` prints, rather than rich tables,
so output is stable in pipes and scripts (`cnet get subs | awk ...`).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

_MIN_CELL = 6
_PADDING = 3


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

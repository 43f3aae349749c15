"""JSON Schemas of every wire object, committed under ``proto-schemas/``.

Why commit generated files: they are the contract for anything that is not this Python package
(a Go or TypeScript client, a `nats` CLI user, a reviewer), and a change to a model shows up in
review as a schema diff. ``--check`` (run by the tests) fails when the files and models drift.

Usage: ``python -m clusternet_nats.api.schemas [--check] [OUTDIR]`` (OUTDIR defaults to
``proto-schemas``). Modules that define more wire messages call ``register_message`` at import
and add themselves to ``EXTRA_MODULES`` so the generator imports them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusternet_nats.api.events import Event
from clusternet_nats.api.registry import all_kinds
from pydantic import BaseModel

EXTRA_MODULES: list[str] = [
    "clusternet_nats.api.inventory",
    "clusternet_nats.api.push",
    "clusternet_nats.api.registration",
]
"""Modules (dotted names) imported before generating, so their register_message calls run."""

_registered: list[WireMessage] = []


@dataclass(frozen=True)
class WireMessage:
    model: type[BaseModel]
    group: str
    version: str
    name: str

    def path(self) -> Path:
        """Where the schema goes under OUTDIR: `<group>/<version>/<Name>.json`, core group as `core`."""
        return Path(self.group or "core", self.version, f"{self.name}.json")


def register_message(model: type[BaseModel], group: str, version: str, name: str | None = None) -> None:
    """Adds a wire message (a pydantic model) to the generated schemas."""
    message = WireMessage(model, group, version, name or model.__name__)
    if message not in _registered:
        _registered.append(message)


def wire_messages() -> list[WireMessage]:
    """The served kinds, the Event, then whatever other modules registered."""
    for module in EXTRA_MODULES:
        importlib.import_module(module)
    kinds = [WireMessage(info.model, info.group, info.version, info.kind) for info in all_kinds()]
    return [*kinds, WireMessage(Event, "core", Event.VERSION, Event.KIND), *_registered]


def render(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generate() -> dict[Path, str]:
    """Relative path -> file content for every wire message."""
    return {message.path(): render(message.model) for message in wire_messages()}


def write(outdir: Path) -> list[Path]:
    """Writes every schema under outdir; returns the files it changed."""
    changed: list[Path] = []
    for relpath, text in generate().items():
        target = outdir / relpath
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            changed.append(target)
    return changed


def drifted(outdir: Path) -> list[Path]:
    """Schema files under outdir that are missing or differ from what the models generate."""
    return [
        outdir / relpath
        for relpath, text in generate().items()
        if not (outdir / relpath).exists() or (outdir / relpath).read_text(encoding="utf-8") != text
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clusternet_nats.api.schemas", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")
    parser.add_argument("outdir", nargs="?", default="proto-schemas", type=Path)
    args = parser.parse_args(argv)
    outdir: Path = args.outdir
    if args.check:
        stale = drifted(outdir)
        for path in stale:
            print(f"drifted: {path}", file=sys.stderr)
        if stale:
            print("regenerate with: python -m clusternet_nats.api.schemas", file=sys.stderr)
        return 1 if stale else 0
    for path in write(outdir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    # Run the imported module's main: register_message calls fill *its* registry, not __main__'s.
    from clusternet_nats.api import schemas

    raise SystemExit(schemas.main())

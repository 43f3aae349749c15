"""JSON Schemas of every wire object, committed under ``proto-schemas/``.

Why commit generated files: they are the contract for anything that is not this Python package
(a Go or TypeScript client, a `nats` CLI user, a reviewer), and a change to a model shows up in
review as a schema diff. ``--check`` (run by the tests) fails when the files and models drift.

Usage: ``python -m clusternet_nats.api.schemas [--check] [OUTDIR]`` (OUTDIR defaults to
``proto-schemas``). Modules that define more wire messages call ``register_message`` at import
and add themselves to ``EXTRA_MODULES`` so the generator imports them.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusternet_nats.api import generated
from clusternet_nats.api.events import Event
from clusternet_nats.api.registry import all_kinds
from pydantic import BaseModel

EXTRA_MODULES: list[str] = [
    "clusternet_nats.api.inventory",
    "clusternet_nats.api.push",
    "clusternet_nats.api.registration",
    "clusternet_nats.api.intake",
    "clusternet_nats.api.predictor",
    "clusternet_nats.api.proxy",
    "clusternet_nats.api.heartbeat",
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


def main(argv: Sequence[str] | None = None) -> int:
    return generated.main(generate, "clusternet_nats.api.schemas", "proto-schemas", __doc__, argv)


if __name__ == "__main__":
    # Run the imported module's main: register_message calls fill *its* registry, not __main__'s.
    from clusternet_nats.api import schemas

    raise SystemExit(schemas.main())

"""Files generated from the models (JSON Schemas, CRDs): write them, or check they have not drifted.

Both generators are a function from nothing to `{relative path: text}`; this is the one place
that compares that with a directory, writes what differs, and offers the `--check` command
line that `make lint` runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

Generator = Callable[[], dict[Path, str]]


def drifted(generate: Generator, outdir: Path) -> list[Path]:
    """Files under outdir that are missing or differ from what the models generate."""
    return [
        outdir / relpath
        for relpath, text in generate().items()
        if not (outdir / relpath).exists() or (outdir / relpath).read_text(encoding="utf-8") != text
    ]


def write(generate: Generator, outdir: Path) -> list[Path]:
    """Writes every generated file under outdir; returns the files it changed."""
    changed: list[Path] = []
    for relpath, text in generate().items():
        target = outdir / relpath
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            changed.append(target)
    return changed


def main(
    generate: Generator, module: str, default_outdir: str, description: str | None, argv: Sequence[str] | None
) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")
    parser.add_argument("outdir", nargs="?", default=default_outdir, type=Path)
    args = parser.parse_args(argv)
    outdir: Path = args.outdir
    if args.check:
        stale = drifted(generate, outdir)
        for path in stale:
            print(f"drifted: {path}", file=sys.stderr)
        if stale:
            print(f"regenerate with: python -m {module}", file=sys.stderr)
        return 1 if stale else 0
    for path in write(generate, outdir):
        print(f"wrote {path}")
    return 0

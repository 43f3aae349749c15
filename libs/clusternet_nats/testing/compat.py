"""Where tests find Clusternet's own example files and CRDs, the corpus that proves compatibility.

The corpus is Clusternet's, not this repository's: a directory (named by `CNET_COMPAT_DIR`,
`../shared/compat` beside the repository by default) holding `clusternet-examples/` (a
Clusternet checkout's `examples/`) and `clusternet-crds/` (its `manifests/crds/`). A fresh clone
has no such directory, so the tests that read it skip, saying where they looked and how to point
them elsewhere, and every other test still runs.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

ENV = "CNET_COMPAT_DIR"
EXAMPLES = "clusternet-examples"
CRDS = "clusternet-crds"
_REPO = Path(__file__).resolve().parents[3]


def compat_dir() -> Path:
    """The corpus directory: `$CNET_COMPAT_DIR`, or `../shared/compat` beside the repository."""
    value = os.environ.get(ENV)
    return Path(value) if value else _REPO.parent / "shared" / "compat"


def missing_reason(path: Path) -> str:
    """Why a test that needs `path` skips: where it looked and what to set."""
    return (
        f"Clusternet's example files and CRDs not found at {path}: set {ENV} to a directory "
        f"holding {EXAMPLES}/ (a Clusternet checkout's examples/) and {CRDS}/ (its manifests/crds/)"
    )


def compat_path(*parts: str) -> Path:
    """`compat_dir()/parts`, skipping the calling test (or, at import time, its whole module)
    when it is absent."""
    path = compat_dir().joinpath(*parts)
    if not path.exists():
        pytest.skip(missing_reason(path), allow_module_level=True)
    return path


def requires_compat(*parts: str) -> pytest.MarkDecorator:
    """A mark that skips a test, with the reason, when `compat_dir()/parts` is absent; for modules
    where only some tests read the corpus."""
    path = compat_dir().joinpath(*parts)
    return pytest.mark.skipif(not path.exists(), reason=missing_reason(path))


def compat_files(*parts: str, suffixes: Collection[str] = (".yaml", ".yml", ".json")) -> list[Any]:
    """The files under `compat_dir()/parts`, as `pytest.param`s named by their relative path, for
    `parametrize`; when the directory is absent, one parameter that skips with the reason."""
    root = compat_dir().joinpath(*parts)
    if not root.is_dir():
        return [pytest.param(root, id="absent", marks=pytest.mark.skip(reason=missing_reason(root)))]
    files = sorted(path for path in root.rglob("*") if path.suffix in suffixes)
    return [pytest.param(path, id=str(path.relative_to(root))) for path in files]

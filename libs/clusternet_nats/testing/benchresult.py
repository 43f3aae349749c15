"""The one format bench results are kept in, so the scale report (bench/scale.py) reads every bench alike.

A figure means something only beside the raw bus rate measured in the same run and the load the
machine was under, on a machine that is described: every record carries all three. A file holds
JSON Lines, one record per run, appended, so one bench invocation measuring several things (a
rollout then a Globalization update) writes several records into the same file.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from clusternet_nats.testing.natsserver import nats_server_binary
from pydantic import BaseModel, ConfigDict, Field, ValidationError

# A figure is a number (seconds, per-second rate, MiB, percent of one core), a mapping of numbers
# per process ({"hub": 123.4, "nats-server": 212.7}), or a label such as the strategy.
Figure = float | str | dict[str, float]

_REPO = Path(__file__).resolve().parents[3]


class Machine(BaseModel):
    """What the figures were measured on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_model: str
    cores: int
    memory_mib: float
    python: str
    nats_server: str
    git_commit: str | None = Field(description="HEAD of the checkout the bench ran from, '+dirty' if it had edits")
    platform: str


class BenchResult(BaseModel):
    """One run of one bench at one cluster count."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bench: str
    clusters: int = Field(ge=0)
    figures: dict[str, Figure]
    reference_msgs_per_s: float = Field(ge=0, description="nats-py publish_async msgs/s, testing/reference.py")
    load_average: tuple[float, float, float] = Field(description="1, 5 and 15 minute load when the run ended")
    machine: Machine
    notes: dict[str, str] = Field(default_factory=dict, description="per figure: why not measured, or how derived")
    recorded_at: str


def _first_line(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc.__class__.__name__})"
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


_OWN_OUTPUT = (":!docs/scale-results", ":!docs/scale.md", ":!docs/scale-*.png")


def _git_commit() -> str | None:
    if not (_REPO / ".git").exists():
        return None
    commit = _first_line(["git", "-C", str(_REPO), "rev-parse", "HEAD"])
    if commit.startswith("unknown"):
        return None
    try:
        dirty = subprocess.run(
            # The scale report's own results, written as its runs go, do not make the code dirty.
            ["git", "-C", str(_REPO), "status", "--porcelain", "--untracked-files=no", "--", ".", *_OWN_OUTPUT],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return commit
    return commit + ("+dirty" if dirty else "")


def machine() -> Machine:
    """The machine this process runs on."""
    try:
        nats_version = _first_line([nats_server_binary(), "--version"])
    except RuntimeError as exc:
        nats_version = f"unknown ({exc})"
    return Machine(
        cpu_model=_cpu_model(),
        cores=os.cpu_count() or 0,
        memory_mib=round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20, 1),
        python=platform.python_version(),
        nats_server=nats_version,
        git_commit=_git_commit(),
        platform=platform.platform(),
    )


def write(
    path: str | Path,
    bench: str,
    clusters: int,
    figures: dict[str, Figure],
    reference: float,
    notes: dict[str, str] | None = None,
) -> BenchResult:
    """Append one run's record to `path` (created with its directory if missing) and return it.

    `reference` is the raw nats-py publish_async rate (testing/reference.publish_async_rate) measured
    in the same run; `notes` says, per figure name, why it was not measured or how it was derived.
    """
    load1, load5, load15 = os.getloadavg()
    result = BenchResult(
        bench=bench,
        clusters=clusters,
        figures=figures,
        reference_msgs_per_s=reference,
        load_average=(round(load1, 2), round(load5, 2), round(load15, 2)),
        machine=machine(),
        notes=notes or {},
        recorded_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as out:
        out.write(result.model_dump_json() + "\n")
    return result


class BenchResultError(ValueError):
    """A results file that is not what `write` produces; the message names the file and line."""


def read(path: str | Path) -> list[BenchResult]:
    """Every record of `path`, in the order written."""
    results: list[BenchResult] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw: Any = json.loads(line)
            results.append(BenchResult.model_validate(raw))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise BenchResultError(f"{path}:{number}: not a bench result: {exc}") from exc
    return results

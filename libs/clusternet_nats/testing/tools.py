"""Paths of the real binaries tests run: etcd, kube-apiserver, kube-controller-manager, kubectl,
helm, the NATS CLI and an OCI registry (CNCF distribution's, for chart tests).

They are built from Go modules by `hack/tools.sh` (the module proxy is the only place this
project may get them from) and cached by version outside the repo; asking for them here runs
that script, which returns at once when the cache is warm, so tests never skip for want of a
binary: they get it, or fail naming the module that could not be built.
"""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import dataclass
from pathlib import Path

TOOLS_SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "tools.sh"


class ToolsError(RuntimeError):
    """The binaries could not be built; the message names the module and the build log."""


@dataclass(frozen=True)
class Tools:
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kubectl: Path
    helm: Path
    nats: Path
    registry: Path


def _parse(output: str) -> Tools:
    paths = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    try:
        return Tools(**{name.replace("-", "_"): Path(path) for name, path in paths.items()})
    except TypeError as err:
        raise ToolsError(f"{TOOLS_SCRIPT} printed unexpected tools {sorted(paths)}: {err}") from None


def ensure_tools() -> Tools:
    """Builds the binaries if they are not cached yet (minutes), then returns their paths.

    The script's progress (which tool, time elapsed) goes to stderr as it runs, so a first run
    outside `make test` is not silent for the minutes Kubernetes takes to build."""
    result = subprocess.run(["bash", str(TOOLS_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise ToolsError(
            f"{TOOLS_SCRIPT} failed (exit {result.returncode}); its messages are above, and each tool's"
            " build log is in the tools cache it names"
        )
    return _parse(result.stdout)


async def run_tool(*argv: str | Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs one of the tools to completion without blocking the event loop; text output."""
    args = [str(arg) for arg in argv]
    proc = await asyncio.create_subprocess_exec(
        *args,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate(input.encode() if input is not None else None)
    assert proc.returncode is not None
    return subprocess.CompletedProcess(args, proc.returncode, out.decode(), err.decode())

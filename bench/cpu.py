"""The CPU a bench's processes used: one definition (user plus system seconds, as `ps` and
`time` count it), so every bench's CPU figures count the same thing."""

from __future__ import annotations

from collections.abc import Mapping

import psutil


def cpu_seconds(processes: Mapping[str, int | psutil.Process]) -> dict[str, float]:
    """User plus system CPU seconds each named process (a pid or a psutil.Process) used so far."""
    out = {}
    for name, proc in processes.items():
        times = (proc if isinstance(proc, psutil.Process) else psutil.Process(proc)).cpu_times()
        out[name] = float(times.user + times.system)
    return out

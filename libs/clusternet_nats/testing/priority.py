"""Simulated clusters yield the CPU to the hub side they stand apart from.

A real child cluster's agent runs on that cluster's machines; a simulated one shares this
machine with nats-server and the hub-side services it is measured against. Each service runs in
a session of its own (so it can be stopped with its children), and Linux schedules each session
as an autogroup: when everyone is busy, every autogroup gets an equal share of the CPU, whatever
its processes' nice values. So ten agent processes hosting 10,000 simulated clusters took ten
twelfths of two cores from nats-server and the deployer, and the fan-out measured was the
simulation's, not the hub's. An agent process is therefore put at the lowest priority, both as
a process (nice) and as an autogroup: the hub side gets the cores first, as it would on a machine
of its own, and the simulated clusters take what it leaves.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

LOWEST_NICE = 19


def yield_cpu(pid: int) -> None:
    """Lowest priority for a process just started (its later threads inherit its nice value) and
    for its session's autogroup, where the kernel has them; silently nothing where it has not."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, LOWEST_NICE)
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(LOWEST_NICE))


def autogroup_nice(pid: int) -> int | None:
    """The nice value of the process's autogroup (None where the kernel keeps no autogroups)."""
    try:
        text = Path(f"/proc/{pid}/autogroup").read_text()
    except OSError:
        return None
    return int(text.split("nice")[-1])

"""Simulated clusters run at the lowest CPU priority, the hub side at its own (testing/priority.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest
from clusternet_nats.testing.priority import LOWEST_NICE, autogroup_nice, yield_cpu

PY_SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def own_session() -> Iterator[subprocess.Popen[bytes]]:
    """A process in a session of its own, as every service process is started."""
    proc = subprocess.Popen(PY_SLEEP, start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_process_yielding_the_cpu_is_lowest_as_a_process_and_as_an_autogroup(
    own_session: subprocess.Popen[bytes],
) -> None:
    yield_cpu(own_session.pid)
    assert psutil.Process(own_session.pid).nice() == LOWEST_NICE
    if autogroup_nice(own_session.pid) is not None:  # where the kernel groups sessions
        assert autogroup_nice(own_session.pid) == LOWEST_NICE
    assert psutil.Process(os.getpid()).nice() != LOWEST_NICE  # the test's own process is untouched

"""The replica flags every hub-side service takes: a bad value is refused before anything starts,
naming the flag."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("service", "args", "named"),
    [
        ("scheduler", ["--replica-id", "a b"], "--replica-id"),
        ("deployer", ["--partitions", "0"], "--partitions"),
        ("predictor", ["--lease-duration", "0.1"], "--lease-duration"),
        ("hub", ["--replica-id", "x" * 65], "--replica-id"),
    ],
)
def test_a_bad_replica_flag_is_refused_naming_it(service: str, args: list[str], named: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"clusternet_nats.{service}", "--nats-url", "nats://127.0.0.1:1", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert named in result.stderr


def test_agents_take_no_replica_flags() -> None:
    """Each agent owns its clusters: nothing to share, so the flag is unknown there."""
    result = subprocess.run(
        [sys.executable, "-m", "clusternet_nats.agent", "--replica-id", "a"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and "--replica-id" in result.stderr

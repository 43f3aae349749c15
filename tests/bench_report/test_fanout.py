"""bench/fanout.py: the bus-alone fan-out bench runs end to end, for both kinds of consumer, and
every consumer receives each of its cluster's writes, in every round, on one stream or spread over
several (its figures are only worth printing if so)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

FANOUT_PY = Path(__file__).resolve().parents[2] / "bench" / "fanout.py"


@pytest.mark.parametrize(("consumer", "streams"), [("push", 1), ("pull", 1), ("push", 3)])
def test_every_consumer_delivers_its_write(consumer: str, streams: int) -> None:
    options = ["--clusters", "25", "--consumer", consumer, "--idle", "0", "--timeout", "60", "--rounds", "2"]
    options += ["--streams", str(streams)]
    run = subprocess.run(
        [sys.executable, str(FANOUT_PY), *options],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    assert f"25 {consumer} consumers (wildcard filters) on {streams} stream(s)" in run.stdout, run.stdout
    for round_ in (1, 2):
        line = rf"round {round_}, 25 writes: [\d,]+/s over [\d.]+ s; every consumer delivered"
        assert re.search(line, run.stdout), run.stdout
    assert re.search(r"raw reference: nats-py publish_async [\d,]+ msgs/s", run.stdout), run.stdout

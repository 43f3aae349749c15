"""benchresult: what a bench writes is what the scale report reads, machine and load included."""

from __future__ import annotations

from pathlib import Path

import pytest
from clusternet_nats.testing import benchresult


def test_written_records_read_back_in_order_with_machine_and_load(tmp_path: Path) -> None:
    path = tmp_path / "results" / "rollout.jsonl"
    benchresult.write(
        path, bench="rollout", clusters=1000,
        figures={"apply_to_success_s": 7.5, "strategy": "Replication", "rss_mib": {"hub": 123.3, "nats-server": 212}},
        reference=43921.0,
    )
    benchresult.write(
        path, bench="globalization", clusters=1000, figures={"globalization_update_s": 2.0},
        reference=40000.0, notes={"descriptions_per_s": "not measured: no KV stream access"},
    )
    first, second = benchresult.read(path)
    assert (first.bench, first.clusters, first.reference_msgs_per_s) == ("rollout", 1000, 43921.0)
    assert first.figures["rss_mib"] == {"hub": 123.3, "nats-server": 212.0}
    assert first.figures["strategy"] == "Replication"
    assert second.notes == {"descriptions_per_s": "not measured: no KV stream access"}
    assert first.machine.cores >= 1
    assert first.machine.memory_mib > 0
    assert first.machine.nats_server.startswith("nats-server: v")
    assert first.machine.git_commit is not None
    assert len(first.load_average) == 3


def test_a_foreign_line_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"bench": "rollout"}\n')
    with pytest.raises(benchresult.BenchResultError, match=r"bad\.jsonl:1: not a bench result"):
        benchresult.read(path)

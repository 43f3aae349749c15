"""Ages and tables look like kubectl's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from clusternet_nats.api.printer_columns import age, human_duration
from clusternet_nats.cli.describe import label_for
from clusternet_nats.cli.printers import render_table


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (5, "5s"),
        (119, "119s"),
        (200, "3m20s"),
        (180, "3m"),
        (3 * 3600, "3h"),
        (2 * 3600 + 300, "125m"),
        (5 * 3600 + 600, "5h10m"),
        (30 * 3600, "30h"),
        (4 * 86400, "4d"),
        (3 * 86400 + 7200, "3d2h"),
        (40 * 86400, "40d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_human_duration(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_age_of_a_timestamp() -> None:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    assert age((now - timedelta(minutes=3)).isoformat().replace("+00:00", "Z"), now) == "3m"
    assert age(None, now) == "<unknown>"


def test_table_columns_are_padded_like_kubectl() -> None:
    text = render_table(["NAME", "AGE"], [["a-rather-long-name", "5s"], ["b", "3m"]])
    width = len("a-rather-long-name") + 3
    assert text.splitlines() == ["NAME".ljust(width) + "AGE", "a-rather-long-name   5s", "b".ljust(width) + "3m"]
    assert render_table(["A", "B"], [["x", "y"]]).splitlines()[1] == "x" + " " * 5 + "y"  # cells are >= 6 wide


def test_describe_labels() -> None:
    assert label_for("apiVersion") == "API Version"
    assert label_for("schedulingStrategy") == "Scheduling Strategy"
    assert label_for("clusterId") == "Cluster ID"
    assert label_for("clusters.clusternet.io/cluster-id") == "clusters.clusternet.io/cluster-id"

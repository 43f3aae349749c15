"""TaintToleration with the cases of clusternet's tainttoleration/taint_toleration_test.go:
TestTaintTolerationScore (5 cases) and TestTaintTolerationFilter (9 cases).

The rejection reads "cluster(s) had untolerated taint {k: v}" (kube-scheduler's current
wording, and what the issue's FailedScheduling example counts) rather than Clusternet's
"clusters(s) had taint {k: v}, that the subscription didn't tolerate".
"""

from __future__ import annotations

from typing import Any

import pytest
from clusternet_nats.scheduler.framework.interfaces import MAX_SCORE
from clusternet_nats.scheduler.plugins.taint_toleration import TaintToleration

from tests.scheduler.conftest import build_cluster, build_subscription

Taints = list[dict[str, str]]


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> dict[str, Any]:
    optional = {"value": value, "effect": effect}
    return {"key": key, "operator": operator, **{k: v for k, v in optional.items() if v}}


PREFER, NO_SCHEDULE = "PreferNoSchedule", "NoSchedule"
ARM, SSD = taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)


@pytest.mark.parametrize(
    ("tolerations", "taints", "expected"),
    [
        pytest.param(
            [toleration("foo", "bar", PREFER)],
            [[taint("foo", "bar", PREFER)], [taint("foo", "blah", PREFER)]],
            [MAX_SCORE, 0],
            id="tolerated taints score higher than intolerable ones",
        ),
        pytest.param(
            [toleration("cpu-type", "arm64", PREFER), toleration("disk-type", "ssd", PREFER)],
            [[], [ARM], [ARM, SSD]],
            [MAX_SCORE, MAX_SCORE, MAX_SCORE],
            id="how many tolerated taints does not matter",
        ),
        pytest.param(
            [toleration("foo", "bar", PREFER)],
            [[], [ARM], [ARM, SSD]],
            [MAX_SCORE, 50, 0],
            id="the more intolerable taints, the lower the score",
        ),
        pytest.param(
            [toleration("cpu-type", "arm64", NO_SCHEDULE), toleration("disk-type", "ssd", NO_SCHEDULE)],
            [[], [taint("cpu-type", "arm64", NO_SCHEDULE)], [ARM, SSD]],
            [MAX_SCORE, MAX_SCORE, 0],
            id="only PreferNoSchedule taints and tolerations count",
        ),
        pytest.param([], [[], [taint("cpu-type", "arm64", PREFER)]], [MAX_SCORE, 0], id="no taints and tolerations"),
    ],
)
def test_score(tolerations: list[dict[str, Any]], taints: list[Taints], expected: list[int]) -> None:
    sub = build_subscription("sub1", "default", [{"clusterAffinity": {}}], clusterTolerations=tolerations)
    clusters = [build_cluster(f"cluster-ns-0{i + 1}", "cluster-test", taints=t) for i, t in enumerate(taints)]
    plugin = TaintToleration()
    scores = plugin.normalize_score(sub, plugin.score(sub, clusters))
    assert scores == {f"cluster-ns-0{i + 1}/cluster-test": s for i, s in enumerate(expected)}


@pytest.mark.parametrize(
    ("tolerations", "taints", "rejected"),
    [
        pytest.param([], [taint("dedicated", "user1", NO_SCHEDULE)], "{dedicated: user1}", id="no tolerations"),
        pytest.param(
            [toleration("dedicated", "user1", NO_SCHEDULE)], [taint("dedicated", "user1", NO_SCHEDULE)], None,
            id="dedicated to user1",
        ),
        pytest.param(
            [toleration("dedicated", "user2", NO_SCHEDULE)],
            [taint("dedicated", "user1", NO_SCHEDULE)],
            "{dedicated: user1}",
            id="dedicated to user1, not user2",
        ),
        pytest.param(
            [toleration("foo", effect=NO_SCHEDULE, operator="Exists")], [taint("foo", "bar", NO_SCHEDULE)], None,
            id="operator Exists",
        ),
        pytest.param(
            [toleration("dedicated", "user2", NO_SCHEDULE), toleration("foo", effect=NO_SCHEDULE, operator="Exists")],
            [taint("dedicated", "user2", NO_SCHEDULE), taint("foo", "bar", NO_SCHEDULE)],
            None,
            id="all of several taints tolerated",
        ),
        pytest.param(
            [toleration("foo", "bar", PREFER)], [taint("foo", "bar", NO_SCHEDULE)], "{foo: bar}",
            id="key and value match, effect does not",
        ),
        pytest.param([toleration("foo", "bar")], [taint("foo", "bar", NO_SCHEDULE)], None, id="empty effect tolerates"),
        pytest.param(
            [toleration("dedicated", "user2", NO_SCHEDULE)], [taint("dedicated", "user1", PREFER)], None,
            id="PreferNoSchedule never filters",
        ),
        pytest.param([], [taint("dedicated", "user1", PREFER)], None, id="no toleration, PreferNoSchedule taint"),
    ],
)
def test_filter(tolerations: list[dict[str, Any]], taints: Taints, rejected: str | None) -> None:
    sub = build_subscription("sub1", "default", [{"clusterAffinity": {}}], clusterTolerations=tolerations)
    status = TaintToleration().filter(sub, build_cluster("cluster-a", "cluster-test", taints=taints))
    if rejected is None:
        assert status.is_success
    else:
        assert status.reasons == (f"cluster(s) had untolerated taint {rejected}",)
        assert status.plugin == "TaintToleration"

"""Clusternet's dividing arithmetic, with the cases and numbers of its own tests.

Ported tables (facts and numbers, not code):
* defaultassigner/algorithm_test.go: TestStaticDivideReplicas (4), TestDynamicDivideReplicas (7)
* helper/normalize_score_test.go: TestDefaultNormalizeScore (7)
* framework/runtime/framework_test.go: TestMergeFeedReplicas (7; None is "no limit" here, see below)
* framework/interfaces/types_test.go: TestTargetClusters_Merge (5 + 1), _MergeOneFeed (4),
  _MergeOneFeed_TargetClusterEmpty (1)
plus numFeasibleClustersToFind (algorithm/generic.go), which Clusternet does not test.
"""

from __future__ import annotations

import pytest
from clusternet_nats.domain.dividing import (
    FeedReplicas,
    TargetClusters,
    dynamic_divide,
    merge_feed,
    merge_feed_replicas,
    normalize_scores,
    num_feasible_clusters_to_find,
    static_divide,
)


@pytest.mark.parametrize(
    ("desired", "weights", "expected"),
    [
        pytest.param(5, [2, 1, 0, 2], [2, 1, 0, 2], id="exact division"),
        pytest.param(10, [2, 1, 2], [4, 2, 4], id="exact division (2 times)"),
        pytest.param(6, [2, 1, 0, 2], [3, 1, 0, 2], id="differential division - 1"),
        pytest.param(5, [5, 1, 0, 2], [4, 0, 0, 1], id="differential division - 2"),
        # sortByWeight's table: leftovers go to the heaviest first, ties to the earlier cluster
        pytest.param(2, [3, 1, 2], [2, 0, 0], id="leftover to weight 3"),
        pytest.param(3, [1, 2, 3, 4], [0, 0, 1, 2], id="leftovers to 4, then 3"),
    ],
)
def test_static_divide(desired: int, weights: list[int], expected: list[int]) -> None:
    assert static_divide(desired, weights) == expected


@pytest.mark.parametrize(
    ("desired", "available", "expected"),
    [
        (6, [3, 6, 9], [1, 2, 3]),
        (2, [3, 6, 9], [0, 1, 1]),
        (3, [3, 6, 9], [1, 1, 1]),
        (3, [0, 0, 0], [0, 0, 0]),
        (6, [1, 2, 2], [1, 2, 2]),
        (-6, [3, 6, 9], [-1, -2, -3]),
        (-2, [3, 6, 9], [0, -1, -1]),
    ],
)
def test_dynamic_divide(desired: int, available: list[int], expected: list[int]) -> None:
    assert dynamic_divide(desired, available) == expected


@pytest.mark.parametrize(
    ("reverse", "scores", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
        (True, [0, 1, 1, 1], [100, 0, 0, 0]),
    ],
)
def test_normalize_scores(reverse: bool, scores: list[int], expected: list[int]) -> None:
    named = {f"c{i}": score for i, score in enumerate(scores)}
    assert list(normalize_scores(named, 100, reverse).values()) == expected


NONE5: FeedReplicas = [None] * 5
NONE3: FeedReplicas = [None] * 3


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(NONE5, NONE5, NONE5, id="both a and b are empty"),
        # Clusternet: [nil]*3 (nil is "failed", and wins); here None is "no limit" and yields
        pytest.param(NONE3, [2, 3, 4], [2, 3, 4], id="a is empty"),
        pytest.param([2, 3, 4], NONE3, [2, 3, 4], id="b is empty"),
        pytest.param([1, 5], [2, 3, 4], [1, 3, 4], id="a is shorter"),
        pytest.param([2, 3, 4], [1, 5], [1, 3, 4], id="b is shorter"),
        pytest.param([2, 3, 4], [1, 5, 1], [1, 3, 1], id="a and b have different values"),
        # Clusternet: [1, nil, nil]
        pytest.param([2, 3, None], [1, None, 1], [1, 3, 1], id="a and b have partial nil values"),
    ],
)
def test_merge_feed_replicas(a: FeedReplicas, b: FeedReplicas, expected: FeedReplicas) -> None:
    assert merge_feed_replicas(a, b) == expected


def merged(target: TargetClusters, clusters: list[str], feeds: dict[str, list[int]]) -> TargetClusters:
    result = target.copy()
    for feed, replicas in feeds.items():
        merge_feed(result, feed, clusters, replicas or None)
    return result


TEMPLATE = TargetClusters(["c1", "c2", "c3"], {"f1": [1, 2, 3], "f2": [], "f3": [1, 0, 1]})


@pytest.mark.parametrize(
    ("clusters", "feeds", "expected"),
    [
        pytest.param(
            ["c2", "c3"],
            {"f1": [1, 2], "f3": [1, 0]},
            TargetClusters(["c1", "c2", "c3"], {"f1": [1, 3, 5], "f2": [], "f3": [1, 1, 1]}),
            id="f1 and f3 in c2 and c3",
        ),
        pytest.param(
            ["c2", "c4"],
            {"f1": [1, 2], "f3": [1, 2]},
            TargetClusters(["c1", "c2", "c3", "c4"], {"f1": [1, 3, 3, 2], "f2": [], "f3": [1, 1, 1, 2]}),
            id="f1 and f3 in c2 and c4",
        ),
        pytest.param(
            ["c2", "c4"],
            {"f3": [1, 2], "f4": [1, 2], "f5": [2, 3]},
            TargetClusters(
                ["c1", "c2", "c3", "c4"],
                {"f1": [1, 2, 3, 0], "f2": [], "f3": [1, 1, 1, 2], "f4": [0, 1, 0, 2], "f5": [0, 2, 0, 3]},
            ),
            id="f3, f4 and f5 in c2 and c4",
        ),
        pytest.param(
            ["c0", "c4"],
            {"f3": [1, 2], "f4": [1, 2], "f5": []},
            TargetClusters(
                ["c1", "c2", "c3", "c0", "c4"],
                {"f1": [1, 2, 3, 0, 0], "f2": [], "f3": [1, 0, 1, 1, 2], "f4": [0, 0, 0, 1, 2], "f5": []},
            ),
            id="f3, f4 and f5 in c0 and c4",
        ),
        pytest.param(
            ["c1", "c3", "c2"],
            {"f2": [1, 2, 0]},
            TargetClusters(["c1", "c2", "c3"], {"f1": [1, 2, 3], "f2": [1, 0, 2], "f3": [1, 0, 1]}),
            id="unsorted cluster",
        ),
        pytest.param(
            ["c1", "c2"],
            {"f1": [1, 1], "f2": [1, 2]},
            TargetClusters(["c1", "c2"], {"f1": [1, 1], "f2": [1, 2]}),
            id="into an empty placement",
        ),
    ],
)
def test_merge(clusters: list[str], feeds: dict[str, list[int]], expected: TargetClusters) -> None:
    source = TargetClusters() if expected.binding_clusters == ["c1", "c2"] else TEMPLATE
    assert merged(source, clusters, feeds) == expected


ONE_FEED = TargetClusters(["c1", "c2", "c3"], {"f1": [1, 2, 3], "f2": [], "f3": [1, 0, 3]})


@pytest.mark.parametrize(
    ("clusters", "feed", "replicas", "expected"),
    [
        pytest.param(
            ["c1", "c2", "c3"],
            "f1",
            [4, 4, 5],
            TargetClusters(["c1", "c2", "c3"], {"f1": [5, 6, 8], "f2": [], "f3": [1, 0, 3]}),
            id="merge one feed",
        ),
        pytest.param(
            ["c1", "c2", "c3"],
            "f4",
            [1, 1, 1],
            TargetClusters(["c1", "c2", "c3"], {"f1": [1, 2, 3], "f2": [], "f3": [1, 0, 3], "f4": [1, 1, 1]}),
            id="merge not exist feed",
        ),
        pytest.param(
            ["c1", "c4"],
            "f1",
            [1, 1],
            TargetClusters(["c1", "c2", "c3", "c4"], {"f1": [2, 2, 3, 1], "f2": [], "f3": [1, 0, 3, 0]}),
            id="merge not exist cluster",
        ),
        pytest.param(
            ["c1", "c4"],
            "f2",
            [1, 4],
            TargetClusters(["c1", "c2", "c3", "c4"], {"f1": [1, 2, 3, 0], "f2": [1, 0, 0, 4], "f3": [1, 0, 3, 0]}),
            id="merge not exist cluster and feed",
        ),
    ],
)
def test_merge_one_feed(clusters: list[str], feed: str, replicas: list[int], expected: TargetClusters) -> None:
    assert merged(ONE_FEED, clusters, {feed: replicas}) == expected


def test_merge_one_feed_into_nothing() -> None:
    assert merged(TargetClusters(), ["c2", "c3"], {"f1": [1, 2], "f3": [1, 0]}) == TargetClusters(
        ["c2", "c3"], {"f1": [1, 2], "f3": [1, 0]}
    )


@pytest.mark.parametrize(
    ("clusters", "percentage", "expected"),
    [
        (0, 0, 0),
        (99, 0, 99),  # fewer than 100: all of them
        (100, 0, 100),  # 50% of 100 is 50, but never fewer than 100
        (200, 0, 100),  # 49% of 200 = 98 -> 100
        (1000, 0, 420),  # 50 - 1000/125 = 42%
        (5000, 0, 500),  # 50 - 40 = 10%
        (10000, 0, 500),  # 50 - 80 < 5: 5%
        (1000, 30, 300),  # a configured percentage
        (1000, 100, 1000),
    ],
)
def test_num_feasible_clusters_to_find(clusters: int, percentage: int, expected: int) -> None:
    assert num_feasible_clusters_to_find(clusters, percentage) == expected

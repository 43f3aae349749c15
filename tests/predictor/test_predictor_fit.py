"""Counting replicas that fit in allocatable resources, and the predictor's subjects."""

import pytest
from clusternet_nats.predictor.fit import MAX_REPLICAS, max_acceptable_replicas
from clusternet_nats.predictor.messages import accommodation_subject, parse_accommodation_subject


@pytest.mark.parametrize(
    ("allocatable", "requests", "expected"),
    [
        ({"cpu": "4", "memory": "8Gi", "pods": "110"}, {"cpu": "500m", "memory": "128Mi"}, 8),
        ({"cpu": "4", "memory": "1Gi", "pods": "110"}, {"cpu": "500m", "memory": "128Mi"}, 8),
        ({"cpu": "4", "memory": "1000Mi", "pods": "110"}, {"cpu": "500m", "memory": "128Mi"}, 7),
        ({"cpu": "4", "memory": "8Gi", "pods": "5"}, {"cpu": "500m"}, 5),
        ({"cpu": "3900m", "memory": "8Gi"}, {"cpu": "0.5"}, 7),
        ({"cpu": "4"}, {"nvidia.com/gpu": "1"}, 0),
        ({"cpu": "4"}, {}, MAX_REPLICAS),
        ({"cpu": "4"}, {"cpu": "0"}, MAX_REPLICAS),
    ],
)
def test_counts_the_scarcest_resource(allocatable: dict[str, str], requests: dict[str, str], expected: int) -> None:
    assert max_acceptable_replicas(allocatable, requests) == expected


def test_subjects_round_trip_dotted_cluster_names() -> None:
    subject = accommodation_subject("clusternet-abcde", "edge.cluster-1")
    assert subject == "predictor.clusternet-abcde.edge.cluster-1.accommodation"
    assert parse_accommodation_subject(subject) == ("clusternet-abcde", "edge.cluster-1")
    assert parse_accommodation_subject("predictor.ns.name.unscheduled") is None

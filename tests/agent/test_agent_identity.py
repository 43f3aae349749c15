"""Cluster identities derive from names alone, so restarts come back as the same clusters."""

from __future__ import annotations

import pytest
from clusternet_nats.agent.identity import parse_labels, parse_labels_cycle, simulated_clusters
from clusternet_nats.api import labels as known
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.domain.names import NAMESPACE_HASH_LENGTH, short_hash


def test_simulated_clusters_are_stable_and_take_labels_in_turn() -> None:
    cycle = parse_labels_cycle("env=prod,region=sh;env=staging")
    made = simulated_clusters("edge", 3, {"team": "a", "env": "dev"}, cycle, ClusterSyncMode.PULL)
    again = simulated_clusters("edge", 3, {}, [], ClusterSyncMode.PULL)

    assert [c.name for c in made] == ["edge-1", "edge-2", "edge-3"]
    assert [c.cluster_id for c in made] == [c.cluster_id for c in again]
    assert [c.namespace for c in made] == [c.namespace for c in again]
    assert len({c.namespace for c in made}) == 3
    assert all(c.namespace == "clusternet-" + short_hash(c.cluster_id, length=NAMESPACE_HASH_LENGTH) for c in made)
    assert [c.labels["env"] for c in made] == ["prod", "staging", "prod"]
    assert made[0].labels[known.CLUSTER_ID] == made[0].cluster_id
    assert made[0].labels[known.CLUSTER_NAME] == "edge-1"
    assert made[1].labels["team"] == "a" and "region" not in made[1].labels


def test_malformed_labels_are_rejected() -> None:
    assert parse_labels(" a=1, b=2 ") == {"a": "1", "b": "2"}
    with pytest.raises(ValueError, match="expected key=value"):
        parse_labels("a=1,oops")
    with pytest.raises(ValueError, match="invalid value"):
        parse_labels("a=not valid!")

"""A change on one cluster re-reckons a Subscription's reservations on that cluster only
(predictor/reservations.py): a rollout over N clusters reports N Description statuses, and
re-reckoning every bound cluster on each of them cost N squared landed counts (issue 15, item 3)."""

from __future__ import annotations

from clusternet_nats.api.apps import FeedInventory, FeedOrder
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.predictor.reservations import Reservations, binding_positions, pending_replicas

CLUSTERS = [f"ns{i}/mc" for i in range(50)]
FEED = FeedOrder(api_version="apps/v1", kind="Deployment", namespace="app", name="web", desired_replicas=100)


def divided() -> tuple[SubscriptionBinding, FeedInventory]:
    binding = SubscriptionBinding(
        subscription_uid="uid", spec_hash=1, binding_clusters=CLUSTERS, replicas={feed_key(FEED): [2] * len(CLUSTERS)}
    )
    finv = FeedInventory.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "FeedInventory",
            "metadata": {"name": "sub", "namespace": "default"},
            "spec": {"feeds": [FEED.to_json_dict()]},
        }
    )
    return binding, finv


def test_one_cluster_change_counts_only_that_cluster() -> None:
    binding, finv = divided()
    asked: list[str] = []

    def landed(cluster: str, _order: FeedOrder, _assigned: int) -> int:
        asked.append(cluster)
        return 1

    everything = pending_replicas("default/sub", binding, finv, landed)
    assert len(asked) == len(CLUSTERS) and len(everything) == len(CLUSTERS)

    asked.clear()
    one = pending_replicas("default/sub", binding, finv, landed, ("ns7/mc",))
    assert asked == ["ns7/mc"], "only the changed cluster's landed replicas are counted"
    assert [(p.cluster, p.replicas) for p in one] == [("ns7/mc", 1)]
    assert pending_replicas("default/sub", binding, finv, landed, ("elsewhere/mc",)) == []


def test_positions_kept_by_the_caller_find_the_same_share() -> None:
    """The predictor keeps each binding's positions (a list search per status was N squared)."""
    binding, finv = divided()
    binding.replicas[feed_key(FEED)][7] = 5
    positions = binding_positions(binding)
    assert positions["ns7/mc"] == 7 and len(positions) == len(CLUSTERS)
    kept = pending_replicas("default/sub", binding, finv, lambda *_: 1, ("ns7/mc", "gone/mc"), positions)
    assert kept == pending_replicas("default/sub", binding, finv, lambda *_: 1, ("ns7/mc", "gone/mc"))
    assert [(p.cluster, p.replicas) for p in kept] == [("ns7/mc", 4)]


def test_replacing_one_cluster_keeps_the_others_and_their_generations() -> None:
    binding, finv = divided()
    reservations = Reservations()
    reservations.replace("default/sub", pending_replicas("default/sub", binding, finv, lambda *_: 0))
    generations = {c: reservations.generation(c) for c in CLUSTERS}

    landed_everything = pending_replicas("default/sub", binding, finv, lambda *_: 2, ("ns3/mc",))
    reservations.replace("default/sub", landed_everything, ("ns3/mc",))
    assert reservations.of("ns3/mc") == []
    assert reservations.generation("ns3/mc") == generations["ns3/mc"] + 1
    assert [p.replicas for p in reservations.of("ns4/mc")] == [2], "another cluster keeps its reservation"
    assert all(reservations.generation(c) == generations[c] for c in CLUSTERS if c != "ns3/mc")

    reservations.replace("default/sub", [])
    assert list(reservations) == [], "a full replace still clears every cluster, the one replaced alone included"

"""The binding arithmetic of graceful failover (scheduler/failover.py)."""

from __future__ import annotations

from clusternet_nats.api.apps import SubscriptionStatus
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.scheduler.failover import available_replicas, replacement_available, with_draining, without

WEB = "apps/v1/Deployment/ns/web"
ID_A, ID_B, ID_C = (f"0000000{x}-0000-0000-0000-000000000000" for x in "abc")
CM = "v1/ConfigMap/ns/cm"


def binding(clusters: list[str], shares: list[int]) -> SubscriptionBinding:
    return SubscriptionBinding(
        subscription_uid="u",
        spec_hash=1,
        binding_clusters=clusters,
        replicas={WEB: shares, CM: []},
        desired_releases=len(clusters),
    )


def test_without_takes_clusters_and_their_shares_out() -> None:
    old = binding(["a/mc", "b/mc", "c/mc"], [2, 3, 4])
    assert without(old, {"b/mc"}).binding_clusters == ["a/mc", "c/mc"]
    assert without(old, {"b/mc"}).replicas == {WEB: [2, 4], CM: []}


def test_a_failed_cluster_keeps_its_old_share_beside_the_new_placement() -> None:
    old = binding(["a/mc", "b/mc", "c/mc"], [2, 3, 4])
    new = binding(["a/mc", "c/mc"], [3, 6]).model_copy(update={"predicted_replicas": {WEB: [5, 9]}})
    kept = with_draining(new, old, ["b/mc"])
    assert kept.binding_clusters == ["a/mc", "b/mc", "c/mc"]
    assert kept.replicas == {WEB: [3, 3, 6], CM: []}
    assert kept.predicted_replicas == {WEB: [5, None, 9]}, "figures stay with their clusters"
    assert kept.draining_clusters == ["b/mc"]
    assert kept.desired_releases == 3
    assert with_draining(new, old, ["a/mc"]) == new, "placed anew: nothing to drain"
    assert without(kept, kept.draining_clusters).replicas == new.replicas


def test_the_replacement_is_available_when_every_other_cluster_reports_its_share() -> None:
    kept = with_draining(binding(["a/mc", "c/mc"], [3, 6]), binding(["a/mc", "b/mc", "c/mc"], [2, 3, 4]), ["b/mc"])
    ids = {"a/mc": ID_A, "b/mc": ID_B, "c/mc": ID_C}
    status = SubscriptionStatus.model_validate(
        {
            "aggregatedStatuses": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": "ns",
                    "name": "web",
                    "feedStatusDetails": [
                        {"clusterId": ID_A, "available": True, "replicaStatus": {"availableReplicas": 3}},
                        {"clusterId": ID_C, "available": True, "replicaStatus": {"availableReplicas": 5}},
                    ],
                }
            ]
        }
    )
    available = available_replicas(status)
    assert available == {ID_A: {WEB: 3}, ID_C: {WEB: 5}}
    assert not replacement_available(kept, ids, available), "c has 5 of its 6"
    available[ID_C][WEB] = 6
    assert replacement_available(kept, ids, available), "the draining cluster's own count does not matter"
    assert not replacement_available(kept, ids, available_replicas(None))

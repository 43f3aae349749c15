"""How the scheduler's binding and the deployer's status make one Subscription status."""

from __future__ import annotations

from clusternet_nats.api.apps import Subscription, SubscriptionStatus
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain.subscriptions import has_binding, scheduled, with_binding


def subscription(uid: str, replicas: int = 1) -> Subscription:
    sub = parse_object(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "s", "namespace": "default", "uid": uid},
            "spec": {
                "subscribers": [{"clusterAffinity": {}}],
                "feeds": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": f"c{replicas}"}],
            },
        }
    )
    assert isinstance(sub, Subscription)
    return sub


def binding(sub: Subscription, uid: str | None = None) -> SubscriptionBinding:
    return SubscriptionBinding(
        subscription_uid=uid or sub.metadata.uid or "",
        spec_hash=spec_hash(sub.spec),
        binding_clusters=["clusternet-a/a"],
        replicas={"v1/ConfigMap/default/c1": []},
        desired_releases=1,
    )


def test_only_a_subscription_has_a_binding() -> None:
    assert has_binding(by_kind("Subscription"))
    assert not has_binding(by_kind("ManagedCluster"))
    assert not has_binding(by_kind("Description"))


def test_the_binding_made_for_this_subscription_joins_its_status() -> None:
    sub = subscription("u1")
    status = SubscriptionStatus(completed_releases=1)
    merged = with_binding(status, binding(sub), sub)
    assert isinstance(merged, SubscriptionStatus)
    assert (merged.binding_clusters, merged.desired_releases, merged.completed_releases) == (["clusternet-a/a"], 1, 1)
    assert merged.replicas == {"v1/ConfigMap/default/c1": []}
    assert merged.spec_hash == spec_hash(sub.spec)
    assert status.binding_clusters is None, "the status given is not changed"


def test_a_binding_for_an_earlier_subscription_of_the_same_name_is_not_shown() -> None:
    sub = subscription("u2")
    status = SubscriptionStatus(completed_releases=0)
    assert with_binding(status, binding(sub, uid="u1"), sub) == status
    other = ManagedClusterStatus(healthz=True)
    assert with_binding(other, binding(sub), sub) is other


def test_the_deployer_acts_only_on_a_binding_for_the_current_spec() -> None:
    sub = subscription("u1")
    assert scheduled(binding(sub), sub)
    assert not scheduled(binding(sub, uid="u0"), sub)
    changed = subscription("u1", replicas=2)
    assert not scheduled(binding(sub), changed), "the spec changed since the scheduler decided"

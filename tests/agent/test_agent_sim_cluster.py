"""The simulated cluster as an API server, scheduler and controllers would make it behave."""

from __future__ import annotations

from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing

OWNER = "clusternet-abcde.app-generic"


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment(name: str, replicas: int, cpu: str | None = None, ns: str = "apps") -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": "64Mi"}} if cpu else {}
    container = {"name": "c", "image": "nginx", "resources": resources}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}},
    }


def ref_of(manifest: dict[str, Any]) -> ObjectRef:
    meta = manifest["metadata"]
    return ObjectRef(manifest["apiVersion"], manifest["kind"], meta.get("namespace", ""), meta["name"])


async def started_cluster() -> SimCluster:
    cluster = SimCluster("unit", Sizing(nodes=3, node_cpu="4", node_memory="8Gi"))
    await cluster.start()
    outcome = await cluster.apply("infra", [namespace("apps")])
    assert outcome.failures == []
    return cluster


async def ready_replicas(cluster: SimCluster, manifest: dict[str, Any]) -> int:
    status = await cluster.observed_status(ref_of(manifest))
    assert status is not None
    return int(status["readyReplicas"])


async def test_six_half_cpu_replicas_all_fit_on_three_four_cpu_nodes() -> None:
    cluster = await started_cluster()
    web = deployment("web", 6, "500m")
    outcome = await cluster.apply(OWNER, [web])
    assert outcome.failures == []
    status = await cluster.observed_status(ref_of(web))
    assert status == {
        "observedGeneration": 1,
        "replicas": 6,
        "updatedReplicas": 6,
        "readyReplicas": 6,
        "availableReplicas": 6,
        "unavailableReplicas": 0,
    }
    facts = await cluster.facts()
    assert (facts.cpu_usage, facts.running_pods, facts.capacity["cpu"]) == ("3", 6, "12")


async def test_thirty_one_cpu_replicas_leave_eighteen_pending() -> None:
    cluster = await started_cluster()
    big = deployment("big", 30, "1")
    await cluster.apply(OWNER, [big])
    assert await ready_replicas(cluster, big) == 12
    status = await cluster.observed_status(ref_of(big))
    assert status is not None and status["unavailableReplicas"] == 18
    assert (await cluster.facts()).total_pods == 30


async def test_deleting_a_workload_frees_capacity_for_later_ones_and_tells_their_owner() -> None:
    cluster = await started_cluster()
    changed: list[str] = []
    cluster.on_status_change(changed.append)
    first, second = deployment("first", 10, "1"), deployment("second", 6, "1")
    await cluster.apply("ns.first", [first])
    await cluster.apply("ns.second", [second])
    assert await ready_replicas(cluster, second) == 2

    pruned = await cluster.prune("ns.first", ())

    assert pruned == [ref_of(first)]
    assert await ready_replicas(cluster, second) == 6
    assert changed == ["ns.second"]


async def test_namespaces_are_created_before_the_objects_listed_ahead_of_them() -> None:
    cluster = await started_cluster()
    web = deployment("web", 1, ns="shop")
    outcome = await cluster.apply(OWNER, [web, namespace("shop")])
    assert outcome.failures == []
    assert outcome.applied == [ref_of(namespace("shop")), ref_of(web)]


async def test_an_object_in_a_missing_namespace_fails_naming_the_namespace() -> None:
    cluster = await started_cluster()
    outcome = await cluster.apply(OWNER, [deployment("web", 1, ns="nowhere")])
    assert outcome.applied == []
    assert outcome.failures == ['apps/v1 Deployment nowhere/web: namespaces "nowhere" not found']


async def test_reapplying_changes_nothing_and_a_spec_change_bumps_generation() -> None:
    cluster = await started_cluster()
    web = deployment("web", 2, "100m")
    await cluster.apply(OWNER, [web])
    obj = cluster.objects.get(ref_of(web))
    assert obj is not None
    version = obj.body["metadata"]["resourceVersion"]

    await cluster.apply(OWNER, [web])
    assert obj.body["metadata"]["resourceVersion"] == version

    await cluster.apply(OWNER, [deployment("web", 3, "100m")])
    status = await cluster.observed_status(ref_of(web))
    assert status is not None and (status["observedGeneration"], status["readyReplicas"]) == (2, 3)


async def test_an_invalid_request_is_rejected_naming_the_field() -> None:
    cluster = await started_cluster()
    outcome = await cluster.apply(OWNER, [deployment("web", 1, "lots")])
    assert len(outcome.failures) == 1
    assert "apps/v1 Deployment apps/web is invalid: spec.template.spec.containers[0]" in outcome.failures[0]


async def test_workloads_of_different_requests_are_each_placed_by_their_own_and_a_changed_request_replaces_it() -> None:
    # Requests are parsed once per distinct pod spec and shared across clusters (workloads.py):
    # each workload still gets its own, a template changed in place gets the new one, and a bad
    # one is rejected every time, never remembered as good.
    cluster, other = await started_cluster(), await started_cluster()
    small, large = deployment("small", 2, "250m"), deployment("large", 1, "2")
    assert (await cluster.apply(OWNER, [small, large])).failures == []
    assert (await other.apply(OWNER, [deployment("small", 2, "250m")])).failures == []
    assert ((await cluster.facts()).cpu_usage, (await other.facts()).cpu_usage) == ("2500m", "500m")
    assert (await cluster.apply(OWNER, [deployment("small", 2, "1"), large])).failures == []
    assert (await cluster.facts()).cpu_usage == "4"
    for _ in range(2):
        outcome = await other.apply(OWNER, [deployment("small", 2, "lots")])
        assert "spec.template.spec.containers[0]" in outcome.failures[0]
    assert (await other.facts()).cpu_usage == "500m"

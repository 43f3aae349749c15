"""Capacity-aware scheduling through real processes, on simulated clusters of different node shapes.

Three agents, one cluster each, reporting every second:

| cluster | region | nodes | room for the examples' nginx (500m CPU, 128Mi each) |
|---|---|---|---|
| sh-* | ap-shanghai | 1 x 2 CPU, 4Gi | 4 |
| bj-* | ap-beijing | 2 x 2 CPU, 4Gi | 8 |
| gz-* | ap-guangzhou | 1 x 1 CPU, 4Gi | 2 |

Clusternet's examples land the replica counts its rules give for that room (worked out beside each
test), `cnet get/describe subs` say so, and a cluster that stops reporting loses its share to the
others within one heartbeat timeout plus scheduling time.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Iterator
from pathlib import Path

import pytest
from clusternet_nats.agent.backends.sim.persistence import saved_states
from clusternet_nats.testing import compat
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually, holds

from .conftest import APPS, CLUSTERS, HubClient, child_objects, cnet

HEARTBEAT = 1.0
"""Seconds between the agents' reports; the hub marks a cluster NotReady after three missed."""
SHAPES = {
    "sh": ("region=ap-shanghai", ["--sim-nodes", "1", "--sim-node-cpu", "2", "--sim-node-memory", "4Gi"]),
    "bj": ("region=ap-beijing", ["--sim-nodes", "2", "--sim-node-cpu", "2", "--sim-node-memory", "4Gi"]),
    "gz": ("region=ap-guangzhou", ["--sim-nodes", "1", "--sim-node-cpu", "1", "--sim-node-memory", "4Gi"]),
}
NGINX = "apps/v1/Deployment/qux/my-nginx"



@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("capacity"), sim_clusters=0)
    frequency = ["--cluster-status-update-frequency", str(HEARTBEAT), "--cluster-status-collect-frequency", "1"]
    for prefix, (labels, shape) in SHAPES.items():
        sut.add_agent(f"agent-{prefix}", prefix, 1, labels, [*shape, *frequency])
    sut.start(timeout=90)
    yield sut
    sut.stop()


async def clusters(hub: HubClient) -> dict[str, str]:
    """Cluster prefix (sh, bj, gz) -> `ns/name` as bindings name them, once all three are registered."""

    async def registered() -> dict[str, str] | None:
        found = {
            m["metadata"]["name"].split("-")[0]: f"{m['metadata']['namespace']}/{m['metadata']['name']}"
            for m in await hub.items(f"{CLUSTERS}/managedclusters")
        }
        return found if set(found) == set(SHAPES) else None

    found: dict[str, str] = await eventually(registered, 60, what="three clusters registered")
    return found


def apply(system: System, *paths: Path) -> None:
    for path in paths:
        result = cnet(system, "apply", "-f", str(path))
        assert result.returncode == 0, result.stderr + result.stdout


def delete(system: System, path: Path) -> None:
    result = cnet(system, "delete", "-f", str(path))
    assert result.returncode == 0, result.stderr + result.stdout


async def placement(hub: HubClient, name: str, names: dict[str, str]) -> dict[str, int] | None:
    """Replicas of the examples' nginx Deployment per cluster prefix."""
    sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/{name}")
    status = (sub or {}).get("status") or {}
    shares = (status.get("replicas") or {}).get(NGINX)
    if not shares:
        return None
    prefix = {v: k for k, v in names.items()}
    return {prefix[c]: n for c, n in zip(status["bindingClusters"], shares, strict=True)}


async def _events(hub: HubClient, name: str, reason: str) -> list[str]:
    events = await hub.items(f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{name}")
    return [e["message"] for e in events if e["reason"] == reason]


async def gone_from_children(system: System) -> bool:
    return not any(("Deployment", "qux", "my-nginx") in child_objects(system, c) for c in _child_names(system))


def _child_names(system: System) -> list[str]:
    return list(saved_states(system.workdir / "agent-state"))


async def test_dynamic_dividing_divides_by_what_each_cluster_has_room_for(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    # Predicted room sh 4, bj 8, gz 2 (14); Clusternet's dynamicDivideReplicas of 6: floors 6*4/14=1,
    # 6*8/14=3, 6*2/14=0 leave 2, given by descending fraction (gz .86, sh .71): sh 2, bj 3, gz 1.
    names = await clusters(hub)
    example = compat.compat_path(compat.EXAMPLES, "dynamic-dividing-scheduling")
    apply(system, example / "nginx-deployment.yaml", example / "nginx-svc.yaml", example / "subscription.yaml")
    got = await eventually(lambda: placement(hub, "dynamic-dividing-scheduling-demo", names), 60, what="divided")
    assert got == {"sh": 2, "bj": 3, "gz": 1}

    listing = cnet(system, "get", "subs", "dynamic-dividing-scheduling-demo")
    # SCHEDULED True and REASON empty: cnet's REASON names only what keeps a Subscription from progressing.
    row = listing.stdout.splitlines()[1].split()
    assert (row[1], len(row)) == ("True", 3), listing.stdout  # NAME SCHEDULED AGE, REASON blank
    described = cnet(system, "describe", "subs", "dynamic-dividing-scheduling-demo").stdout
    table = described[described.index("Placement:") : described.index("Events:")]
    for prefix, (replicas, room) in {"sh": (2, 4), "bj": (3, 8), "gz": (1, 2)}.items():
        row = next(line.split() for line in table.splitlines() if names[prefix] in line)
        assert row[1:4] == [NGINX, str(replicas), str(room)], table

    # Scaled to 20, more than the 14 there is room for: the FeedInventory changes, what is left
    # (2/5/1) is added and the other 6 are reported, not dropped.
    await eventually(lambda: available(hub, "dynamic-dividing-scheduling-demo", 6), 60, what="6 available")
    scaled = tmp_path / "nginx-deployment.yaml"
    scaled.write_text((example / "nginx-deployment.yaml").read_text().replace("replicas: 6", "replicas: 20"))
    apply(system, scaled)
    short = f"could not place 6 replica(s) of {NGINX}: 3/3 clusters took replicas"

    async def told() -> list[str]:
        events = await _events(hub, "dynamic-dividing-scheduling-demo", "FailedScheduling")
        return [message for message in events if message.startswith(short)]

    await eventually(told, 60, what="FailedScheduling for the 6 without room")

    # All the room taken, and never more: as the new pods start, the node inventories change and
    # the Subscription (still short of 6) is evaluated again; replicas the status reports ready
    # before an inventory counts their pods must not be offered twice (issue 9).
    room = {"sh": 4, "bj": 8, "gz": 2}
    over: list[dict[str, int]] = []

    async def within_room() -> dict[str, int] | None:
        got = await placement(hub, "dynamic-dividing-scheduling-demo", names)
        if got is not None and any(got[c] > room[c] for c in got):
            over.append(got)
        return got if not over else None

    await eventually(lambda: _equals(within_room(), room), 60, what="all the room taken")
    await eventually(lambda: available(hub, "dynamic-dividing-scheduling-demo", 14), 60, what="14 available")
    await holds(within_room, 5 * HEARTBEAT, "the placement stays within each cluster's room")
    assert not over, f"placed beyond the room {room}: {over}"

    delete(system, example / "subscription.yaml")
    await eventually(lambda: gone_from_children(system), 60, what="the example's replicas removed")


async def test_get_subs_says_why_nothing_is_placed(system: System, hub: HubClient, tmp_path: Path) -> None:
    """Its own feeds (not the examples' an earlier test applies, which skips without the compat
    corpus), so it says the same run alone or after the others."""
    await clusters(hub)
    nowhere = tmp_path / "nowhere.yaml"
    selector = "{key: region, operator: In, values: [ap-nowhere]}"
    manifest = FAILOVER.replace("name: failover", "name: nowhere").replace("{key: region, operator: Exists}", selector)
    manifest = manifest.replace("name: qux}", "name: nowhere}").replace("name: my-nginx, namespace: qux", NOWHERE_FEED)
    nowhere.write_text(NOWHERE_FEEDS + manifest)
    apply(system, nowhere)

    async def reason() -> list[str] | None:
        listing = cnet(system, "get", "subs", "nowhere", "-o", "wide").stdout.splitlines()
        return listing[1].split() if len(listing) > 1 and "Unschedulable" in listing[1] else None

    row = await eventually(reason, 30, what="cnet get subs shows Unschedulable")
    assert row[1:3] == ["False", "Unschedulable"]
    assert "0/3 clusters are available: 3 cluster(s) didn't match cluster affinity." in " ".join(row)
    delete(system, nowhere)


@pytest.mark.parametrize(
    ("example", "name", "expected"),
    [
        # Subgroups pick minClusters per region: shanghai asks 2 but has 1; beijing 1. Replicated whole.
        ("subscription-replication.yaml", "replication-scheduling-demo", None),
        # Weights shanghai 2, beijing 1 over 6 replicas: 4 and 2.
        ("subscription-static-dividing.yaml", "static-dividing-scheduling-demo", {"sh": 4, "bj": 2}),
        # Room shanghai 4, beijing 8 (12): 6*4/12 = 2, 6*8/12 = 4.
        ("subscription-dynamic-dividing.yaml", "dynamic-dividing-scheduling-demo", {"sh": 2, "bj": 4}),
    ],
)
async def test_scheduling_group_examples(
    system: System, hub: HubClient, example: str, name: str, expected: dict[str, int] | None
) -> None:
    names = await clusters(hub)
    group = compat.compat_path(compat.EXAMPLES, "scheduling-group")
    apply(system, group / "nginx-deployment.yaml", group / "nginx-svc.yaml", group / example)

    async def bound() -> list[str] | None:
        sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/{name}")
        status = (sub or {}).get("status") or {}
        return status.get("bindingClusters") or None

    clusters_bound = await eventually(bound, 60, what=f"{name} bound")
    assert sorted(clusters_bound) == sorted([names["sh"], names["bj"]])
    if expected is not None:
        assert await eventually(lambda: placement(hub, name, names), 30) == expected
    delete(system, group / example)
    await eventually(lambda: gone_from_children(system), 60, what="the example's replicas removed")


async def test_a_cluster_that_stops_reporting_loses_its_share_and_gets_none_back(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    names = await clusters(hub)
    # The examples' nginx (6 x 500m), divided by equal weights: 2 each, which even gz has room for.
    subscription = tmp_path / "failover.yaml"
    subscription.write_text(FAILOVER)
    group = compat.compat_path(compat.EXAMPLES, "scheduling-group")
    apply(system, group / "nginx-deployment.yaml", subscription)
    assert await eventually(lambda: placement(hub, "failover", names), 60) == {"sh": 2, "bj": 2, "gz": 2}
    await eventually(lambda: available(hub, "failover", 6), 60, what="6 replicas available")

    system.services["agent-gz"].kill()
    stopped = time.monotonic()
    # Static weights over sh and bj: 3 each. gz keeps its 2 (draining) until they report them
    # available, which simulated clusters do at once, so the draining binding is seen by its Event.
    moved = await eventually(lambda: _without_gz(hub, names), 3 * HEARTBEAT + 20, interval=0.1, what="gz's share")
    took = time.monotonic() - stopped
    assert moved == {"sh": 3, "bj": 3}
    print(f"gz's share moved {took:.1f}s after its agent stopped (heartbeat timeout {3 * HEARTBEAT:.0f}s)")
    told = await _events(hub, "failover", "FailingOver")
    kept = "kept there until the new placement is available"
    assert told == [f"moving the replicas of {names['gz']} to other clusters; {kept}"]
    await eventually(lambda: available(hub, "failover", 6), 30, what="6 replicas available on sh and bj")

    system.services["agent-gz"].start()
    await eventually(lambda: _ready(hub, names["gz"]), 30, what="gz Ready again")
    await holds(lambda: _without_gz(hub, names), 3 * HEARTBEAT, "replicas do not flap back to gz when it returns")
    delete(system, subscription)


async def _equals(got: Awaitable[object], want: object) -> bool:
    return await got == want


async def available(hub: HubClient, name: str, replicas: int) -> bool:
    sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/{name}")
    for agg in ((sub or {}).get("status") or {}).get("aggregatedStatuses") or []:
        if agg["kind"] == "Deployment":
            summary = (agg.get("feedStatusSummary") or {}).get("replicaStatus") or {}
            return bool(summary.get("availableReplicas") == replicas)
    return False


async def _without_gz(hub: HubClient, names: dict[str, str]) -> dict[str, int] | None:
    got = await placement(hub, "failover", names)
    return got if got is not None and "gz" not in got else None


async def _ready(hub: HubClient, cluster: str) -> bool:
    namespace, name = cluster.split("/")
    mc = await hub.get(f"{CLUSTERS}/namespaces/{namespace}/managedclusters/{name}")
    taints = (mc or {}).get("spec", {}).get("taints") or []
    return mc is not None and not any(t["key"] == "clusters.clusternet.io/unschedulable" for t in taints)


NOWHERE_FEED = "name: web, namespace: nowhere"
NOWHERE_FEEDS = """
apiVersion: v1
kind: Namespace
metadata: {name: nowhere}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: nowhere}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.25, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
---
"""

FAILOVER = """
apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: failover, namespace: default}
spec:
  subscribers:
    - clusterAffinity:
        matchExpressions: [{key: region, operator: Exists}]
      weight: 1
  schedulingStrategy: Dividing
  dividingScheduling: {type: Static}
  feeds:
    - {apiVersion: v1, kind: Namespace, name: qux}
    - {apiVersion: apps/v1, kind: Deployment, name: my-nginx, namespace: qux}
"""

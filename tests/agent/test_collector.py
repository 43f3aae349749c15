"""The status collector: what it reports, made again only when the cluster's facts changed."""

from __future__ import annotations

from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.collector import LabelAggregation, StatusCollector

from tests.agent.test_agent_sim_cluster import deployment


async def test_unchanged_facts_keep_the_last_collection_and_a_change_makes_a_new_one() -> None:
    cluster = SimCluster("collected", Sizing(nodes=2))
    await cluster.start()
    collector = StatusCollector(cluster, 20, 180, False, LabelAggregation())
    first = await collector.collect()
    assert await collector.collect() is first
    assert first.status.pod_statistics is not None and first.status.pod_statistics.running_pods == 0

    await cluster.apply("default.web", [deployment("web", 3, cpu="100m", ns="default")])
    changed = await collector.collect()
    assert changed is not first
    assert changed.status.pod_statistics is not None and changed.status.pod_statistics.running_pods == 3
    assert sum(sum((node.pods_by_description or {}).values()) for node in changed.nodes) == 3
    assert await collector.collect() is changed

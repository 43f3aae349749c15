"""One informer per bucket per process: the hub's controllers share their caches (issue 15).

Each controller asks its ServiceContext for the buckets it follows; several of the hub's follow
the same ones (ManagedClusters, their statuses, Manifests). Every object used to be held once per
controller; now a process holds one copy, and each controller's handler still sees every change.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.hub.clusterhealth import ClusterHealth
from clusternet_nats.hub.clusterinit import ClusterInitController
from clusternet_nats.hub.feedinventory import FeedInventoryController
from clusternet_nats.hub.helmcharts import HelmChartController
from clusternet_nats.runtime.service import CommonOptions, ServiceContext, serve
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext


async def test_the_hub_controllers_follow_each_bucket_with_one_informer(
    nats_server: NatsServer, js: JetStreamContext, unique_ns: str
) -> None:
    built: list[ServiceContext] = []
    seen: list[str] = []

    async def build(ctx: ServiceContext) -> None:
        ClusterHealth(ctx)
        ClusterInitController(ctx, enabled=True)
        FeedInventoryController(ctx)
        HelmChartController(ctx)
        ctx.objects(ManagedCluster).add_handler(lambda key, _cluster: seen.append(key))
        built.append(ctx)

    stop = asyncio.Event()
    options = CommonOptions(nats_url=nats_server.url, health_port=-1)
    service = asyncio.create_task(serve("hub-controllers", options, build, stop))
    try:
        await eventually(lambda: bool(built) and built[0].ready, what="the controllers started")
        ctx = built[0]
        per_bucket = Counter((i.bucket, i.key_filter) for i in ctx.informers)
        assert per_bucket[(KindInfo.of(ManagedCluster).bucket, ">")] == 1, per_bucket
        assert max(per_bucket.values()) == 1, f"buckets followed twice: {per_bucket}"

        cluster = ManagedCluster.model_validate(
            {
                "apiVersion": "clusters.clusternet.io/v1beta1",
                "kind": "ManagedCluster",
                "metadata": {"name": "mc", "namespace": unique_ns},
                "spec": {"clusterId": str(uuid.uuid4()), "syncMode": "Pull"},
            }
        )
        await ObjectStore(js, KindInfo.of(ManagedCluster)).create(cluster)
        key = f"{unique_ns}.mc"
        await eventually(lambda: key in seen, what="the last handler of the shared informer called")
        shared = ctx.objects(ManagedCluster)
        assert shared.get(key) is not None and shared.get(key) is ctx.objects(ManagedCluster).get(key)
    finally:
        stop.set()
        await asyncio.wait_for(service, 45)

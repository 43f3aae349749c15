"""Which ManagedCluster a socket id names, as Clusternet finds it: `spec.clusterId`, or the
`clusters.clusternet.io/cluster-id` label. An informer of the ManagedClusters bucket, so a proxied
request costs no store round trip; it starts and stops with the hub's HTTP application.
"""

from __future__ import annotations

from aiohttp import web
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.labels import CLUSTER_ID
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import Informer, ObjectStore
from nats.aio.client import Client as NATS

SYNC_TIMEOUT = 30.0


class ClusterIndex:
    def __init__(self, nc: NATS) -> None:
        js = nc.jetstream()
        store: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind(ManagedCluster.KIND))
        self.informer: Informer[ManagedCluster] = Informer(
            nc, js, store.info.bucket, lambda key, data, revision: store.decode(data, revision, key)
        )
        self._keys: dict[str, str] = {}
        """Cluster id (spec or label) → the ManagedCluster's key."""
        self._ids: dict[str, set[str]] = {}
        self.informer.add_handler(self._index)

    def _index(self, key: str, cluster: ManagedCluster | None) -> None:
        for stale in self._ids.pop(key, set()):
            if self._keys.get(stale) == key:
                del self._keys[stale]
        if cluster is not None:
            ids = {cluster.spec.cluster_id, (cluster.metadata.labels or {}).get(CLUSTER_ID)} - {None, ""}
            self._ids[key] = {str(i) for i in ids}
            self._keys.update((i, key) for i in self._ids[key])

    def add_to(self, app: web.Application) -> None:
        async def start(_app: web.Application) -> None:
            await self.informer.start()

        async def stop(_app: web.Application) -> None:
            await self.informer.stop()

        app.on_startup.append(start)
        app.on_cleanup.append(stop)

    async def find(self, cluster_id: str) -> ManagedCluster | None:
        await self.informer.wait_synced(SYNC_TIMEOUT)
        key = self._keys.get(cluster_id)
        return self.informer.get(key) if key is not None else None

"""Which ManagedCluster a socket id names, as Clusternet finds it: `spec.clusterId`, or the
`clusters.clusternet.io/cluster-id` label. It indexes the hub's one informer of ManagedClusters
(the ServiceContext's, shared with cluster health and the other controllers), so a proxied request
costs no store round trip and the hub holds each ManagedCluster once.
"""

from __future__ import annotations

from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.labels import CLUSTER_ID
from clusternet_nats.store import Informer

SYNC_TIMEOUT = 30.0


class ClusterIndex:
    def __init__(self, informer: Informer[ManagedCluster]) -> None:
        self.informer = informer
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

    async def find(self, cluster_id: str) -> ManagedCluster | None:
        await self.informer.wait_synced(SYNC_TIMEOUT)
        key = self._keys.get(cluster_id)
        return self.informer.get(key) if key is not None else None

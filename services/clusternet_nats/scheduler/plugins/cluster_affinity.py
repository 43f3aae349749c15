"""ClusterAffinity: a cluster is feasible only if some subscriber's clusterAffinity selects it.

Clusternet lists candidates by each subscriber's selector before filtering; as a filter, a
cluster no subscriber selects gets a reason of its own, so the failure summary accounts for
every cluster, as Kubernetes' node-affinity filter does for nodes.
"""

from __future__ import annotations

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.framework.interfaces import Status

REASON = "cluster(s) didn't match cluster affinity"


def selected(sub: Subscription, cluster: ManagedCluster) -> bool:
    """Some subscriber's clusterAffinity selects the cluster (Clusternet's candidate list)."""
    labels = cluster.metadata.labels or {}
    return any(subscriber.cluster_affinity.matches(labels) for subscriber in sub.spec.subscribers)


class ClusterAffinity:
    name = "ClusterAffinity"

    def filter(self, sub: Subscription, cluster: ManagedCluster) -> Status:
        return Status() if selected(sub, cluster) else Status.unschedulable(self.name, REASON)

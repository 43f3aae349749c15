"""ClusterAffinity: a cluster is feasible only if some subscriber's clusterAffinity selects it.

Clusternet lists candidates by each subscriber's selector before filtering; as a filter, a
cluster no subscriber selects gets a reason of its own, so the failure summary accounts for
every cluster, as Kubernetes' node-affinity filter does for nodes.
"""

from __future__ import annotations

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.framework import Status

REASON = "cluster(s) didn't match cluster affinity"


class ClusterAffinityFilter:
    name = "ClusterAffinity"

    def filter(self, sub: Subscription, cluster: ManagedCluster) -> Status:
        labels = cluster.metadata.labels or {}
        if any(subscriber.cluster_affinity.matches(labels) for subscriber in sub.spec.subscribers):
            return Status()
        return Status.unschedulable(self.name, REASON)

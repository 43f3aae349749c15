"""StaticAssigner: each feed's replicas split over the selected clusters by subscriber weights.

As Clusternet's: a cluster's weight is the sum of the positive weights of the subscribers whose
clusterAffinity selects it; floors first, leftovers one each to the heaviest clusters
(`domain.dividing.static_divide`). Feeds that are not workloads get []; if no cluster has weight
nothing is divided at all. A Subscription without `dividingScheduling` divides statically (our
API defaults the type to Static; Clusternet would find no assigner for it).
"""

from __future__ import annotations

from clusternet_nats.api.apps import DividingType, SchedulingStrategy, Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.domain.dividing import static_divide
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.scheduler.framework.interfaces import SUCCESS, CycleState, Status, TargetClusters


def cluster_weight(sub: Subscription, cluster: ManagedCluster) -> int:
    labels = cluster.metadata.labels or {}
    weights = ((s.weight or 0, s.cluster_affinity) for s in sub.spec.subscribers)
    return sum(weight for weight, affinity in weights if weight > 0 and affinity.matches(labels))


class StaticAssigner:
    name = "StaticAssigner"

    def assign(self, state: CycleState, selected: TargetClusters) -> tuple[TargetClusters, Status]:
        spec = state.sub.spec
        dividing = spec.dividing_scheduling
        if spec.scheduling_strategy != SchedulingStrategy.DIVIDING or (
            dividing is not None and dividing.type != DividingType.STATIC
        ):
            return selected, Status.skipped(self.name)
        weights = []
        for key in selected.binding_clusters:
            cluster = state.cluster(key)
            weights.append(0 if cluster is None else cluster_weight(state.sub, cluster))
        result = TargetClusters(list(selected.binding_clusters))
        if sum(weights) == 0:
            return result, SUCCESS
        desired = {feed_key(order): order.desired_replicas for order in (state.finv.spec.feeds if state.finv else [])}
        for feed in spec.feeds:
            key = feed_key(feed)
            replicas = desired.get(key)
            result.replicas[key] = [] if replicas is None else static_divide(replicas, weights)
        return result, SUCCESS

"""What the cluster-health tests share: the controller on its own, and one cluster as the hub stores it."""

from __future__ import annotations

from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.service import AgentOptions
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import ConditionStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.hub.clusterhealth import ClusterHealth
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

TAINT = "clusters.clusternet.io/unschedulable"


async def build_health(ctx: ServiceContext) -> None:
    ClusterHealth(ctx)


class Watch:
    """Reads one cluster's ManagedCluster and status as the hub stores them."""

    def __init__(self, js: JetStreamContext, cluster: AgentOptions | ClusterIdentity) -> None:
        self.ident = cluster.identities()[0] if isinstance(cluster, AgentOptions) else cluster
        self.clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind("ManagedCluster"))
        self.statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
        self.key = self.clusters.key(self.ident.namespace, self.ident.name)

    async def ready_is(self, want: ConditionStatus) -> ManagedClusterStatus | None:
        found = await self.statuses.get(self.key)
        conditions = (found.value.conditions or []) if found else []
        return found.value if any(c.type == "Ready" and c.status is want for c in conditions) else None

    async def tainted(self) -> bool:
        found = await self.clusters.get(self.ident.namespace, self.ident.name)
        return found is not None and any(t.key == TAINT and t.effect == "NoSchedule" for t in found.spec.taints or [])

    async def untainted(self) -> bool:
        return not await self.tainted()

    async def goes_unknown_and_tainted(self) -> None:
        status = await eventually(lambda: self.ready_is(ConditionStatus.UNKNOWN), 15, what="Ready Unknown")
        assert (status.healthz, status.livez, status.readyz) == (False, False, False)
        ready = next(c for c in status.conditions or [] if c.type == "Ready")
        assert ready.reason == "ClusterStatusUnknown"
        await eventually(self.tainted, 10, what="unschedulable taint")

    async def recovers(self) -> None:
        await eventually(lambda: self.ready_is(ConditionStatus.TRUE), 10, what="Ready True again")
        await eventually(self.untainted, 10, what="taint removed")

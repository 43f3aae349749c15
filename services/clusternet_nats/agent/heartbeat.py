"""The cluster's presence on the hub: its ManagedCluster, and a status report every period.

Until registration lands, the agent writes its own ManagedCluster (merging its identity into
whatever is there, so taints or labels others added survive, and writing nothing when nothing
changed). Status goes to `managedclusters-status` at start and every `--report-frequency`
(Clusternet's default: 3 minutes); a failed round is retried within a second, not a period.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version

import structlog
from clusternet_nats.agent.backends.base import ClusterBackend
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.api.clusters import (
    ManagedCluster,
    ManagedClusterSpec,
    ManagedClusterStatus,
    NodeStatistics,
    PodStatistics,
    ResourceUsage,
)
from clusternet_nats.api.meta import Condition, ConditionStatus, set_condition, utcnow
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import ObjectStore, StatusStore
from nats.js import JetStreamContext

DEFAULT_REPORT_FREQUENCY = 180.0
_RETRY_SECONDS = 1.0
AGENT_VERSION = f"v{version('clusternet-nats')}"

log = structlog.get_logger(__name__)


class Heartbeat:
    def __init__(
        self,
        js: JetStreamContext,
        identity: ClusterIdentity,
        backend: ClusterBackend,
        frequency: float = DEFAULT_REPORT_FREQUENCY,
    ) -> None:
        info = by_kind(ManagedCluster.KIND)
        assert info.status_bucket is not None
        self.identity, self.backend, self.frequency = identity, backend, frequency
        self.clusters: ObjectStore[ManagedCluster] = ObjectStore(js, info)
        self.statuses = StatusStore(js, info.status_bucket, ManagedClusterStatus)
        self.key = self.clusters.key(identity.namespace, identity.name)
        self.registered = False
        """True once the ManagedCluster and a first status are written: the cluster is schedulable."""
        self._log = log.bind(cluster=identity.name)

    async def run(self) -> None:
        while True:
            try:
                if not self.registered:
                    await self.register()
                await self.report()
                self.registered = True
                delay = self.frequency
            except Exception as err:
                self._log.warning("heartbeat.failed", error=repr(err))
                delay = min(self.frequency, _RETRY_SECONDS)
            await asyncio.sleep(delay)

    async def register(self) -> None:
        """Creates or updates this cluster's ManagedCluster; writes nothing if it is up to date."""
        ident = self.identity
        current = await self.clusters.get(ident.namespace, ident.name)
        spec = ManagedClusterSpec(cluster_id=ident.cluster_id, sync_mode=ident.sync_mode)
        desired = (
            current.model_copy(deep=True) if current else ManagedCluster.new(ident.name, ident.namespace, spec=spec)
        )
        desired.labels.update(ident.labels)
        desired.spec.cluster_id, desired.spec.sync_mode = ident.cluster_id, ident.sync_mode
        desired.spec.cluster_type = ident.cluster_type
        if current is None:
            await self.clusters.create(desired)
            self._log.info("heartbeat.registered", namespace=ident.namespace, cluster_id=ident.cluster_id)
        else:
            await self.clusters.update(desired, current)

    async def report(self) -> None:
        facts = await self.backend.facts()
        current = await self.statuses.get(self.key)
        ready = Condition(
            type="Ready",
            status=ConditionStatus.TRUE,
            last_transition_time=utcnow(),
            reason="ManagedClusterReady",
            message="managed cluster is ready.",
        )
        status = ManagedClusterStatus(
            last_observed_time=utcnow(),
            k8s_version=facts.k8s_version,
            agent_version=AGENT_VERSION,
            platform=facts.platform,
            healthz=True,
            livez=True,
            readyz=True,
            app_pusher=False,
            capacity=facts.capacity,
            allocatable=facts.allocatable,
            resource_usage=ResourceUsage(cpu_usage=facts.cpu_usage, memory_usage=facts.memory_usage),
            node_statistics=NodeStatistics(
                ready_nodes=facts.ready_nodes, not_ready_nodes=facts.not_ready_nodes, unknown_nodes=0, lost_nodes=0
            ),
            pod_statistics=PodStatistics(running_pods=facts.running_pods, total_pods=facts.total_pods),
            conditions=set_condition((current.value.conditions or []) if current else [], ready),
            heartbeat_frequency_seconds=int(self.frequency),
        )
        await self.statuses.put(self.key, status, current.revision if current else 0)

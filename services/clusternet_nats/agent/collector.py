"""Collects the cluster's status every `--cluster-status-collect-frequency` (20 s, as Clusternet).

Collecting (asking the cluster) and reporting (writing to the hub) run at different rates, as in
Clusternet's status manager: the heartbeat sends whatever was collected last, so a slow cluster
never delays a heartbeat and a frequent heartbeat never hammers the cluster. Besides the status,
a collection holds the node inventory the predictor reads, and the node labels under the
aggregate prefixes that at least the threshold share of worker nodes agree on (Clusternet's
`--labels-aggregate-threshold` 0.8, `--labels-aggregate-prefix node.clusternet.io/`).

Facts equal to the last collection's keep its models (about 35 of a simulated cluster's 50 us per
collection): a process of thousands of clusters collects hundreds of times a second, nearly
always finding nothing changed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version

import structlog
from clusternet_nats.agent.backends.base import ClusterBackend, ClusterFacts, NodeFacts
from clusternet_nats.api.clusters import ManagedClusterStatus, NodeStatistics, PodStatistics, ResourceUsage
from clusternet_nats.api.inventory import NodeInventoryItem

DEFAULT_COLLECT_FREQUENCY = 20.0
DEFAULT_LABEL_THRESHOLD = 0.8
DEFAULT_LABEL_PREFIXES = ("node.clusternet.io/",)
AGENT_VERSION = f"v{version('clusternet-nats')}"
_CONTROL_PLANE = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class LabelAggregation:
    threshold: float = DEFAULT_LABEL_THRESHOLD
    prefixes: tuple[str, ...] = DEFAULT_LABEL_PREFIXES

    def owns(self, key: str) -> bool:
        return key.startswith(self.prefixes)

    def common(self, nodes: Sequence[NodeFacts]) -> dict[str, str]:
        """Each prefixed key's most frequent value, when at least `threshold` of workers carry it."""
        workers = [n for n in nodes if not any(k in n.labels for k in _CONTROL_PLANE)]
        counts: dict[str, Counter[str]] = {}
        for node in workers:
            for key, value in node.labels.items():
                if self.owns(key):
                    counts.setdefault(key, Counter())[value] += 1
        out = {}
        for key, values in counts.items():
            value, count = values.most_common(1)[0]
            if count / len(workers) >= self.threshold:
                out[key] = value
        return out


@dataclass(frozen=True)
class Collected:
    """One collection: the status to report (without conditions), nodes, aggregated labels."""

    status: ManagedClusterStatus
    nodes: list[NodeInventoryItem]
    labels: dict[str, str]


class StatusCollector:
    def __init__(
        self,
        backend: ClusterBackend,
        frequency: float,
        report_frequency: float,
        app_pusher: bool,
        aggregation: LabelAggregation,
    ) -> None:
        self.backend, self.frequency = backend, frequency
        self.report_frequency, self.app_pusher = report_frequency, app_pusher
        self.aggregation = aggregation
        self.latest: Collected | None = None
        self._facts: ClusterFacts | None = None
        """What `latest` was made from."""

    async def run(self) -> None:
        while True:
            try:
                await self.collect()
            except Exception as err:
                log.warning("collector.failed", error=repr(err))
            await asyncio.sleep(self.frequency)

    async def current(self) -> Collected:
        return self.latest or await self.collect()

    async def collect(self) -> Collected:
        facts = await self.backend.facts()
        if self.latest is not None and facts == self._facts:
            return self.latest
        status = ManagedClusterStatus(
            k8s_version=facts.k8s_version,
            agent_version=AGENT_VERSION,
            platform=facts.platform,
            apiserver_url=facts.apiserver_url or None,
            healthz=facts.healthz,
            livez=facts.livez,
            readyz=facts.readyz,
            app_pusher=self.app_pusher,
            capacity=facts.capacity,
            allocatable=facts.allocatable,
            resource_usage=ResourceUsage(cpu_usage=facts.cpu_usage, memory_usage=facts.memory_usage),
            service_cidr=facts.service_cidr,
            cluster_cidr=facts.cluster_cidr,
            node_statistics=NodeStatistics(
                ready_nodes=facts.ready_nodes,
                not_ready_nodes=facts.not_ready_nodes,
                unknown_nodes=facts.unknown_nodes,
                lost_nodes=facts.lost_nodes,
            ),
            pod_statistics=PodStatistics(running_pods=facts.running_pods, total_pods=facts.total_pods),
            heartbeat_frequency_seconds=max(1, round(self.report_frequency)),
        )
        nodes = [
            NodeInventoryItem(
                name=n.name,
                ready=n.ready,
                labels=n.labels,
                capacity=n.capacity,
                allocatable=n.allocatable,
                requested=n.requested,
                taints=list(n.taints),
                unschedulable=n.unschedulable,
                pods_by_description=n.pods_by_description,
            )
            for n in facts.nodes
        ]
        self.latest, self._facts = Collected(status, nodes, self.aggregation.common(facts.nodes)), facts
        return self.latest

"""The agent process: one or N cluster agents under the runtime's single service lifecycle.

The runtime's ServiceContext gives the process its health server, metrics and clean SIGTERM;
the cluster agents run as its one background job, started together once the process is up
and stopped together (flushing simulated state, closing their connections) on shutdown.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field
from pathlib import Path

import structlog
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.heartbeat import DEFAULT_REPORT_FREQUENCY
from clusternet_nats.agent.identity import ClusterIdentity, simulated_clusters, single_cluster
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.runtime.service import CommonOptions, ServiceContext

SERVICE = "clusternet-agent"
DEFAULT_SIM_PREFIX = "sim"

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class AgentOptions:
    cluster_name: str | None = None
    cluster_id: str | None = None
    cluster_labels: dict[str, str] = field(default_factory=dict)
    sync_mode: ClusterSyncMode = ClusterSyncMode.PULL
    sim_clusters: int = 0
    """0: one cluster named --cluster-name; N: clusters `<name>-1` .. `<name>-N`."""
    sim_labels_cycle: list[dict[str, str]] = field(default_factory=list)
    sizing: Sizing = field(default_factory=Sizing)
    state_dir: Path | None = None
    report_frequency: float = DEFAULT_REPORT_FREQUENCY

    def identities(self) -> list[ClusterIdentity]:
        name = self.cluster_name or DEFAULT_SIM_PREFIX
        if not self.sim_clusters:
            return [single_cluster(name, self.cluster_id, self.cluster_labels, self.sync_mode)]
        if self.cluster_id:
            raise ValueError("--cluster-id names one cluster; with --sim-clusters ids derive from cluster names")
        return simulated_clusters(name, self.sim_clusters, self.cluster_labels, self.sim_labels_cycle, self.sync_mode)


class Agent:
    def __init__(self, options: AgentOptions) -> None:
        self.clusters = [
            ClusterAgent(ident, SimCluster(ident.name, options.sizing, options.state_dir), options.report_frequency)
            for ident in options.identities()
        ]

    async def build(self, ctx: ServiceContext) -> None:
        ctx.metrics.gauge_fn("agent_clusters_ready", lambda: sum(c.ready for c in self.clusters))
        ctx.add_readiness_check(lambda: all(c.ready for c in self.clusters))
        ctx.run_forever(functools.partial(self.run, ctx.options))

    async def run(self, options: CommonOptions) -> None:
        """Starts every cluster agent, then holds them until cancelled at shutdown."""
        try:
            async with asyncio.TaskGroup() as group:
                for cluster in self.clusters:
                    group.create_task(cluster.start(options))
            log.info("agent.started", clusters=len(self.clusters))
            await asyncio.Event().wait()
        except Exception as err:
            log.error("agent.start_failed", error=repr(err))
            raise
        finally:
            results = await asyncio.gather(*(c.stop() for c in self.clusters), return_exceptions=True)
            for cluster, result in zip(self.clusters, results, strict=True):
                if isinstance(result, BaseException):
                    log.warning("agent.stop_failed", cluster=cluster.identity.name, error=repr(result))

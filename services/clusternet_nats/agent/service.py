"""The agent process: one or N cluster agents under the runtime's single service lifecycle.

The runtime's ServiceContext gives the process its health server, metrics and clean SIGTERM;
the cluster agents run as its one background job, started together once the process is up
and stopped together (flushing simulated state, closing their connections) on shutdown.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import STARTING_AT_ONCE, ClusterAgent, StatusSettings
from clusternet_nats.agent.heartbeat import DEFAULT_REPORT_FREQUENCY
from clusternet_nats.agent.identity import ClusterIdentity, simulated_clusters, single_cluster
from clusternet_nats.agent.registration import Enrollment, RegistrationSettings
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.helm.render import Renderer, find_helm
from clusternet_nats.runtime import heap
from clusternet_nats.runtime.service import CommonOptions, ServiceContext
from clusternet_nats.store.cancelling import uncancelled

if TYPE_CHECKING:
    from clusternet_nats.agent.backends.kube import KubeCluster

DEFAULT_SIM_PREFIX = "sim"

log = structlog.get_logger(__name__)


class Backend(StrEnum):
    SIM = "sim"
    KUBE = "kube"


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
    status: StatusSettings = field(default_factory=StatusSettings)
    backend: Backend = Backend.SIM
    kubeconfig: Path | None = None
    """The kube backend's cluster; None: the pod's service account (in-cluster)."""
    helm_binary: Path | None = None
    """helm for charts (the kube backend installs with it, simulated clusters render with it);
    None: `helm` on PATH. Simulated clusters without one record releases without rendering."""
    registration: RegistrationSettings | None = None
    """Registration mode (a bootstrap token was given); None: pre-provisioned identities."""

    enrollments: dict[str, Enrollment] = field(default_factory=dict)
    """One per cluster name, shared by the process connection and the cluster's agent."""

    def enrollment(self, identity: ClusterIdentity) -> Enrollment | None:
        if self.registration is None:
            return None
        return self.enrollments.setdefault(identity.name, Enrollment(self.registration, identity))

    def identities(self) -> list[ClusterIdentity]:
        if self.sync_mode is ClusterSyncMode.PUSH and not self.status.app_pusher:
            # Clusternet's agent refuses this too: in Push only the hub deploys, and it may not.
            raise ValueError("--sync-mode Push needs --app-pusher (Clusternet's AppPusher feature gate)")
        name = self.cluster_name or DEFAULT_SIM_PREFIX
        if not self.sim_clusters:
            return [single_cluster(name, self.cluster_id, self.cluster_labels, self.sync_mode)]
        if self.cluster_id:
            raise ValueError("--cluster-id names one cluster; with --sim-clusters ids derive from cluster names")
        return simulated_clusters(name, self.sim_clusters, self.cluster_labels, self.sim_labels_cycle, self.sync_mode)


class Agent:
    def __init__(self, options: AgentOptions) -> None:
        self.options = options
        if options.backend is Backend.KUBE:
            if options.sim_clusters:
                raise ValueError("--sim-clusters is for --backend sim; --backend kube runs one real cluster")
            options.identities()  # validates; the real identity needs the cluster's id, see `run`
            self.clusters: list[ClusterAgent] = []
            return
        helm = find_helm(options.helm_binary)
        if helm is None:
            log.warning("agent.no_helm", detail="no --helm-binary, no helm on PATH: charts recorded, not rendered")
        # one renderer for every simulated cluster: a chart with the same values renders once
        renderer = Renderer(helm, options.state_dir / "helm" if options.state_dir else None) if helm else None
        starting = asyncio.Semaphore(STARTING_AT_ONCE)
        self.clusters = [
            ClusterAgent(
                ident,
                SimCluster(ident.name, options.sizing, options.state_dir, renderer),
                options.report_frequency,
                options.status,
                options.enrollment(ident),
                starting,
            )
            for ident in options.identities()
        ]

    async def build(self, ctx: ServiceContext) -> None:
        ctx.metrics.sample_value("cnet_agent_clusters_ready", lambda: sum(c.ready for c in self.clusters))
        ctx.add_readiness_check(lambda: bool(self.clusters) and all(c.ready for c in self.clusters))
        ctx.run_forever(functools.partial(self.run, ctx.options))

    async def run(self, options: CommonOptions) -> None:
        """Starts every cluster agent, then holds them until cancelled at shutdown."""
        try:
            if self.options.backend is Backend.KUBE:
                self.clusters = [await self._kube_cluster()]
            with heap.building():  # the clusters' state, built once, is not garbage
                async with asyncio.TaskGroup() as group:
                    for cluster in self.clusters:
                        group.create_task(cluster.start(options))
            log.info("agent.started", clusters=len(self.clusters))
            await asyncio.Event().wait()
        except Exception as err:
            log.error("agent.start_failed", error=repr(err))
            raise
        finally:
            await uncancelled(self._stop_clusters())

    async def _stop_clusters(self) -> None:
        """Each cluster's stop is bounded step by step. Cut short by the cancellation the
        service's stop sends again, it would leave its connection and its leaf node running."""
        results = await asyncio.gather(*(c.stop() for c in self.clusters), return_exceptions=True)
        for cluster, result in zip(self.clusters, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("agent.stop_failed", cluster=cluster.identity.name, error=repr(result), exc_info=result)

    async def _kube_cluster(self) -> ClusterAgent:
        """A real cluster's id is the cluster's own (as Clusternet's), so its agent is built once it answers."""
        backend = _kube_backend(self.options.kubeconfig, find_helm(self.options.helm_binary) or "helm")
        try:
            cluster_id = self.options.cluster_id or await backend.wait_cluster_id()
        except BaseException:
            await backend.close()
            raise
        identity = dataclasses.replace(self.options, cluster_id=cluster_id).identities()[0]
        return ClusterAgent(
            identity, backend, self.options.report_frequency, self.options.status, self.options.enrollment(identity)
        )


async def with_cluster_id(options: AgentOptions) -> AgentOptions:
    """The options with the kube backend's cluster id read from the cluster (the Lease uid, as
    Clusternet's agent takes it), for registration, which files the id before any agent runs."""
    if options.backend is not Backend.KUBE or options.cluster_id:
        return options
    backend = _kube_backend(options.kubeconfig)
    try:
        return dataclasses.replace(options, cluster_id=await backend.wait_cluster_id())
    finally:
        await backend.close()


def _kube_backend(kubeconfig: Path | None, helm: str | Path = "helm") -> KubeCluster:
    """The kube backend, imported only when used: its Kubernetes client takes a third of a
    second to import, paid by every process of simulated clusters otherwise."""
    from clusternet_nats.agent.backends.kube import KubeCluster

    return KubeCluster(kubeconfig, helm)

"""One child cluster's agent: its own NATS connection, informer, work queue and heartbeat.

A process may host many simulated clusters; each gets what a separate agent process would
(its own connection, so NATS sees N clients and can give each its own permissions later, and
its own ServiceContext, so informers, queues and background jobs start and stop in the order
every service relies on). Its log lines carry `cluster=<name>`: it runs inside bound context.
Who deploys follows Clusternet's sync-mode rules (api/push.py): the Description controller
when the agent pulls, the push responder when the hub pushes.

A cluster's first connection is retried until it is made, never given up: in a process of
simulated clusters one cluster failing to start would cancel its siblings' starts with it. The
process's clusters start through one gate, a few dozen at a time, from their first connection to
their informers' first listing: a thousand handshakes at one instant on one event loop outlast the
client's connect timeout, and each one timed out is done again; ten thousand consumer creations at
once on one stream queue in nats-server (one took minutes in a 10,000-cluster start), time out,
and are asked again. Either way the fleet spent its start redoing work, not finishing it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import structlog
from clusternet_nats.agent.applier import DescriptionApplier
from clusternet_nats.agent.backends.base import ClusterBackend
from clusternet_nats.agent.collector import DEFAULT_COLLECT_FREQUENCY, LabelAggregation, StatusCollector
from clusternet_nats.agent.description_controller import DescriptionController
from clusternet_nats.agent.heartbeat import Heartbeat
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.proxy import ProxyServer
from clusternet_nats.agent.push_responder import PushResponder
from clusternet_nats.agent.recovery import PushedApplier, PushedRecovery
from clusternet_nats.agent.registration import Enrollment
from clusternet_nats.api.push import deployable_by_agent
from clusternet_nats.api.registration import inbox_prefix
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.service import CommonOptions, ServiceContext, bounded
from clusternet_nats.store.informer import FLEET_IDLE_POLL
from clusternet_nats.store.intake import IntakeClient

SERVICE = "clusternet-agent"
STARTING_AT_ONCE = 32
"""A process's clusters connecting and listing at once, at most (see the module's docstring)."""
STARTING_HOLD = 30.0
"""Seconds a cluster holds the gate while it lists, at most: one that cannot (its hub refuses it)
must not keep the rest of its process from starting."""

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class StatusSettings:
    """How the cluster's status is collected and reported, and whether the hub may push."""

    collect_frequency: float = DEFAULT_COLLECT_FREQUENCY
    app_pusher: bool = False
    """Clusternet's AppPusher feature gate: the hub may deploy here (Push, or Dual)."""
    aggregation: LabelAggregation = field(default_factory=LabelAggregation)


class ClusterAgent:
    def __init__(
        self,
        identity: ClusterIdentity,
        backend: ClusterBackend,
        report_frequency: float,
        settings: StatusSettings | None = None,
        enrollment: Enrollment | None = None,
        starting: asyncio.Semaphore | None = None,
    ) -> None:
        self.identity = identity
        self.backend = backend
        self.report_frequency = report_frequency
        self.settings = settings or StatusSettings()
        self.ctx: ServiceContext | None = None
        self.heartbeat: Heartbeat | None = None
        self._conn: Connection | None = None
        self.enrollment = enrollment
        """Registration mode: how this cluster registers and reaches the hub (None: pre-provisioned)."""
        self.starting = starting or asyncio.Semaphore(STARTING_AT_ONCE)
        """Shared by the process's clusters: held from the first connection to the first listing."""

    @property
    def ready(self) -> bool:
        """Listening to its Descriptions, and registered with the hub."""
        return self.ctx is not None and self.ctx.is_ready() and self.heartbeat is not None and self.heartbeat.registered

    async def start(self, options: CommonOptions) -> None:
        with structlog.contextvars.bound_contextvars(cluster=self.identity.name):
            await self.backend.start()
            self._conn = await self._connection(options)  # registers first (registration.py has its own gate)
            async with self.starting:
                listing = await self._connect(options, self._conn)
                try:
                    # A cluster that cannot list (its hub refusing it) leaves the gate after a while.
                    await asyncio.wait({listing}, timeout=STARTING_HOLD)
                except BaseException:
                    listing.cancel()
                    raise
            await listing
            log.info("agent.cluster_started", namespace=self.identity.namespace, sync_mode=self.identity.sync_mode)

    async def _connect(self, options: CommonOptions, conn: Connection) -> asyncio.Task[None]:
        """Connects, wires the cluster's controllers and starts them: the task that ends once
        their informers have listed."""
        nc = await conn.connect(timeout=None)
        # Registered: NATS lets this cluster use no JetStream; the hub's intake reads and writes for it.
        ident = self.identity
        intake = IntakeClient(nc, ident.cluster_id, ident.namespace) if self.enrollment is not None else None
        self.ctx = ServiceContext(SERVICE, options, conn, nc, intake, idle_poll=FLEET_IDLE_POLL)
        settings = self.settings
        pulls = deployable_by_agent(self.identity.sync_mode, settings.app_pusher)
        if pulls:
            DescriptionController(self.ctx, self.identity, self.backend)
        self.ctx.run_forever(ProxyServer(nc, self.identity, self.backend.apiserver()).serve)
        if settings.app_pusher:
            applier = DescriptionApplier(self.backend)
            if not pulls:  # the hub deploys: drift is put back from what it pushed
                applier = PushedApplier(self.backend)
                PushedRecovery(self.ctx, self.identity, applier)
            self.ctx.run_forever(PushResponder(self.ctx, self.identity, applier).serve)
        collector = StatusCollector(
            self.backend,
            settings.collect_frequency,
            self.report_frequency,
            settings.app_pusher,
            settings.aggregation,
        )
        self.ctx.run_forever(collector.run)
        enrollment = self.enrollment
        created = (enrollment.created, enrollment.created_status) if enrollment is not None else (None, None)
        self.heartbeat = Heartbeat(self.ctx, self.identity, collector, self.report_frequency, *created)
        self.ctx.run_forever(self.heartbeat.run)
        return asyncio.ensure_future(self.ctx.start())

    async def _connection(self, options: CommonOptions) -> Connection:
        name = f"{SERVICE}/{self.identity.name}"
        if self.enrollment is None:
            return Connection(options.nats_url, name, options.nats_creds)
        url = await self.enrollment.connect_url(options.nats_url)
        return Connection(url, name, inbox_prefix=inbox_prefix(self.identity.cluster_id))

    async def stop(self) -> None:
        with structlog.contextvars.bound_contextvars(cluster=self.identity.name):
            # Each step bounded, as a service's are (runtime/service.py): one that hangs is logged
            # by name and the rest still run, down to its leaf node's process.
            if self.ctx is not None:
                await bounded(self.ctx.stop(), "components", SERVICE)
            await bounded(self.backend.close(), "backend", SERVICE)
            if self._conn is not None:
                await bounded(self._conn.close(), "nats connection", SERVICE)
            if self.enrollment is not None:
                await bounded(self.enrollment.close(), "registration and leaf node", SERVICE)

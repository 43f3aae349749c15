"""One child cluster's agent: its own NATS connection, informer, work queue and heartbeat.

A process may host many simulated clusters; each gets what a separate agent process would
(its own connection, so NATS sees N clients and can give each its own permissions later, and
its own ServiceContext, so informers, queues and background jobs start and stop in the order
every service relies on). Its log lines carry `cluster=<name>`: it runs inside bound context.
"""

from __future__ import annotations

import structlog
from clusternet_nats.agent.backends.base import ClusterBackend
from clusternet_nats.agent.description_controller import DescriptionController
from clusternet_nats.agent.heartbeat import Heartbeat
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.service import CommonOptions, ServiceContext

COMPONENT = "clusternet-agent"

log = structlog.get_logger(__name__)


class ClusterAgent:
    def __init__(self, identity: ClusterIdentity, backend: ClusterBackend, report_frequency: float) -> None:
        self.identity = identity
        self.backend = backend
        self.report_frequency = report_frequency
        self.ctx: ServiceContext | None = None
        self.heartbeat: Heartbeat | None = None
        self._conn: Connection | None = None

    @property
    def ready(self) -> bool:
        """Listening to its Descriptions, and registered with the hub."""
        return self.ctx is not None and self.ctx.is_ready() and self.heartbeat is not None and self.heartbeat.registered

    async def start(self, options: CommonOptions) -> None:
        with structlog.contextvars.bound_contextvars(cluster=self.identity.name):
            await self.backend.start()
            self._conn = Connection(options.nats_url, f"{COMPONENT}/{self.identity.name}", options.nats_creds)
            self.ctx = ServiceContext(COMPONENT, options, self._conn, await self._conn.connect())
            # Clusternet's DeployableByAgent: in Push mode the hub deploys (AppPusher is off, so Dual pulls).
            if self.identity.sync_mode is not ClusterSyncMode.PUSH:
                DescriptionController(self.ctx, self.identity, self.backend)
            self.heartbeat = Heartbeat(self.ctx.js, self.identity, self.backend, self.report_frequency)
            self.ctx.run_forever(self.heartbeat.run)
            await self.ctx.start()
            log.info("agent.cluster_started", namespace=self.identity.namespace, sync_mode=self.identity.sync_mode)

    async def stop(self) -> None:
        with structlog.contextvars.bound_contextvars(cluster=self.identity.name):
            if self.ctx is not None:
                await self.ctx.stop()
            await self.backend.close()
            if self._conn is not None:
                await self._conn.close()

"""Drift recovery when the hub deploys (Push, or Dual with AppPusher).

Clusternet's agent puts back what is changed or deleted in its child whatever the sync mode: it
watches the objects it or the hub applied and re-applies their Description. When the hub pushes,
this agent has no Description informer; it remembers the last Description the hub pushed for
each key instead (`PushedApplier`, what the push responder applies with) and, when the backend
reports drift, applies that again. A per-key lock keeps such a re-apply from interleaving with a
newer push or a removal of the same Description: whichever runs second sees the other's result.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import structlog
from clusternet_nats.agent.applier import Deployed, DescriptionApplier
from clusternet_nats.agent.backends.base import ClusterBackend, ObjectRef
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.api.apps import Description, DescriptionPhase
from clusternet_nats.domain.descriptions import restored
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store.events import EventRecorder

log = structlog.get_logger(__name__)


class RestoreFailed(Exception):
    """Putting drifted objects back failed; raised so the work queue retries."""


async def tell_restored(recorder: EventRecorder, logger: Any, desc: Description, refs: list[ObjectRef]) -> None:
    """The Event (and log line) for an apply that put back `refs`: Clusternet's
    SuccessfullyDeployed, naming them."""
    names = [str(ref) for ref in refs]
    logger.info("description.restored", description=desc.namespaced_name(), objects=names)
    event = restored(desc, names)
    await recorder.normal(desc, event.reason, event.message)


class PushedApplier(DescriptionApplier):
    """A DescriptionApplier that remembers what it last deployed per key, to deploy it again."""

    def __init__(self, backend: ClusterBackend) -> None:
        super().__init__(backend)
        self.pushed: dict[str, Description] = {}
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def deploy_restoring(self, key: str, desc: Description) -> Deployed:
        async with self._locks[key]:
            self.pushed[key] = desc
            return await super().deploy_restoring(key, desc)

    async def remove(self, key: str) -> list[ObjectRef]:
        async with self._locks[key]:
            self.pushed.pop(key, None)
            return await super().remove(key)

    async def redeploy(self, key: str) -> tuple[Description, Deployed] | None:
        """Deploys again what was last pushed for `key`; None when nothing is (any more)."""
        async with self._locks[key]:
            desc = self.pushed.get(key)
            if desc is None:
                return None
            return desc, await super().deploy_restoring(key, desc)


class PushedRecovery:
    """Re-applies a pushed Description when the backend reports drift in its objects."""

    def __init__(self, ctx: ServiceContext, identity: ClusterIdentity, applier: PushedApplier) -> None:
        self.applier = applier
        self.recorder = ctx.recorder
        self.queue = ctx.queue("recovery", self.reconcile)
        applier.backend.on_drift(self.queue.add)
        self._log = log.bind(cluster=identity.name)

    async def reconcile(self, key: str) -> None:
        redeployed = await self.applier.redeploy(key)
        if redeployed is None:
            return
        desc, deployed = redeployed
        if deployed.restored:
            await tell_restored(self.recorder, self._log, desc, deployed.restored)
        if deployed.status.phase is DescriptionPhase.FAILURE:
            raise RestoreFailed(deployed.status.reason)

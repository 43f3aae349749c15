"""Makes the child cluster hold exactly what its Descriptions say, and reports how that went.

Level-triggered: reconcile(key) reads the Description as it is now. Present: record it Pending
if it has no status yet, deploy it (see applier.py) and write `descriptions-status` if it
changed. Absent: delete everything it applied and its status. The backend queues a Description
again when its objects' status changes, or when one is changed or deleted in the cluster by
anyone else (drift); an apply that puts such objects back is told by a SuccessfullyDeployed
Event naming them, as Clusternet's agent (Recovery) records one after its re-apply. Watching only
`<dedicated namespace>.>` of `descriptions` (in registration mode through the consumer the hub
makes for the cluster) is what confines a child to its own keys. Only once the informer has
listed (and so holds every Description, not a partial view) are owners found in the cluster
with no Description queued for removal, so what was deleted while the agent was down or cut off
is pruned, and nothing else is.

Each status write is a CAS on the revision this agent last wrote, remembered, not read back
first: one round trip per change instead of a read and a write (the agent is the only writer of
its Descriptions' status while it pulls them; a write by anyone else, or a deletion, fails the
CAS, and only then is the key read again).
"""

from __future__ import annotations

import structlog
from clusternet_nats.agent.applier import DescriptionApplier
from clusternet_nats.agent.backends.base import ClusterBackend
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.recovery import tell_restored
from clusternet_nats.api.apps import Description, DescriptionPhase, DescriptionStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import StatusStore, Versioned
from clusternet_nats.store.deploy_events import DeployOutcomes
from clusternet_nats.store.errors import AlreadyExistsError, ConflictError
from clusternet_nats.store.keys import namespace_filter

log = structlog.get_logger(__name__)


class DeployError(Exception):
    """Some objects of a Description could not be applied; raised so the work queue retries."""


class DescriptionController:
    def __init__(self, ctx: ServiceContext, identity: ClusterIdentity, backend: ClusterBackend) -> None:
        info = by_kind(Description.KIND)
        assert info.status_bucket is not None
        self.backend = backend
        self.applier = DescriptionApplier(backend)
        self.statuses: StatusStore[DescriptionStatus] = ctx.status_store(info.status_bucket, DescriptionStatus)
        self.informer = ctx.objects(Description, namespace_filter(identity.namespace))
        self.queue = ctx.queue("descriptions", self.reconcile)
        self.informer.add_handler(lambda key, _desc: self.queue.add(key))
        backend.on_status_change(self.queue.add)
        backend.on_drift(self.queue.add)
        ctx.run_forever(self.prune_orphans)
        self._log = log.bind(cluster=identity.name)
        self.outcomes = DeployOutcomes(ctx.recorder, self._log)
        self.recorder = ctx.recorder
        self._written: dict[str, Versioned[DescriptionStatus]] = {}
        """Each status as this agent last wrote or read it (so it exists, Pending at least)."""

    async def prune_orphans(self) -> None:
        """Queues every owner in the cluster whose Description is gone (run once listed)."""
        for owner in sorted(await self.backend.owners()):
            if self.informer.get(owner) is None:
                self.queue.add(owner)

    async def reconcile(self, key: str) -> None:
        desc = self.informer.get(key)
        if desc is None:
            await self._remove(key)
            return
        await self._record_pending(key)
        deployed = await self.applier.deploy_restoring(key, desc)
        status = deployed.status
        await self._write_status(key, status)
        await self.outcomes.report(key, self.informer.revision(key), desc, status)
        if deployed.restored:
            await tell_restored(self.recorder, self._log, desc, deployed.restored)
        if status.phase is DescriptionPhase.FAILURE:
            raise DeployError(status.reason)

    async def _record_pending(self, key: str) -> None:
        """Before the first apply, a Pending status: a Subscription's deletion waits for every
        child whose status exists, so a child cut off after applying but before reporting is
        waited for too (what Clusternet's Description finalizer gives it)."""
        if key in self._written:
            return
        pending = DescriptionStatus(phase=DescriptionPhase.PENDING)
        try:
            self._written[key] = Versioned(pending, await self.statuses.put(key, pending, 0))
        except AlreadyExistsError:
            # Written before (a previous life of this agent): it exists, as wanted.
            current = await self.statuses.get(key)
            if current is not None:
                self._written[key] = current

    async def _write_status(self, key: str, status: DescriptionStatus) -> None:
        """Writes `status` unless it is what was last written, CAS on that write's revision; on
        a conflict (someone else wrote or deleted it) once more on the revision read now."""
        known = self._written.get(key)
        if known is not None and known.value == status:
            return
        try:
            revision = await self.statuses.put(key, status, known.revision if known else 0)
        except ConflictError:
            self._written.pop(key, None)
            current = await self.statuses.get(key)
            if current is not None and current.value == status:
                self._written[key] = current
                return
            revision = await self.statuses.put(key, status, current.revision if current else 0)
        self._written[key] = Versioned(status, revision)

    async def _remove(self, key: str) -> None:
        self._written.pop(key, None)
        pruned = await self.applier.remove(key)
        if await self.statuses.get(key) is not None:
            await self.statuses.delete(key)
        if self.outcomes.forget(key) or pruned:
            self._log.info("description.removed", description=key, objects=len(pruned))

"""Makes the child cluster hold exactly what its Descriptions say, and reports how that went.

Level-triggered: reconcile(key) reads the Description as it is now. Present: apply every object
(Generic) or chart (Helm), prune what this Description applied before and no longer names, and
write `descriptions-status` if it changed. Absent: delete everything it applied and its status.
Watching only `<dedicated namespace>.>` of `descriptions` is what lets NATS permissions confine
a child to its own keys later. After the first list, owners found in the cluster with no
Description are queued too, so what was deleted while the agent was down is pruned.
"""

from __future__ import annotations

import json
from typing import Any

import structlog
from clusternet_nats.agent.backends.base import ApplyOutcome, ClusterBackend, Manifest
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.api.apps import (
    DeployerType,
    Description,
    DescriptionPhase,
    DescriptionStatus,
    HelmChart,
    ManifestStatus,
)
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import StatusStore
from clusternet_nats.store.keys import namespace_filter
from pydantic import ValidationError

log = structlog.get_logger(__name__)


class DeployError(Exception):
    """Some objects of a Description could not be applied; raised so the work queue retries."""


def _decode_manifests(raw: list[bytes]) -> tuple[list[Manifest], list[str]]:
    manifests: list[Manifest] = []
    failures: list[str] = []
    for index, data in enumerate(raw):
        try:
            obj: Any = json.loads(data)
        except ValueError as err:
            failures.append(f"raw[{index}] is not valid JSON: {err}")
            continue
        if isinstance(obj, dict):
            manifests.append(obj)
        else:
            failures.append(f"raw[{index}] is not a JSON object")
    return manifests, failures


def _decode_charts(raw: list[bytes]) -> tuple[list[HelmChart], list[str]]:
    charts: list[HelmChart] = []
    failures: list[str] = []
    for index, data in enumerate(raw):
        try:
            charts.append(HelmChart.model_validate_json(data))
        except ValidationError as err:
            details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            failures.append(f"chartRaw[{index}] is not a valid HelmChart: {details}")
    return charts, failures


class DescriptionController:
    def __init__(self, ctx: ServiceContext, identity: ClusterIdentity, backend: ClusterBackend) -> None:
        info = by_kind(Description.KIND)
        assert info.status_bucket is not None
        self.backend = backend
        self.recorder = ctx.recorder
        self.statuses = StatusStore(ctx.js, info.status_bucket, DescriptionStatus)
        self.informer = ctx.objects(Description, namespace_filter(identity.namespace))
        self.queue = ctx.queue("descriptions", self.reconcile)
        self.informer.add_handler(lambda key, _desc: self.queue.add(key))
        backend.on_status_change(self.queue.add)
        ctx.run_forever(self.prune_orphans)
        self._reported: dict[str, tuple[int, str | None]] = {}
        self._log = log.bind(cluster=identity.name)

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
        if desc.spec.deployer is DeployerType.HELM:
            charts, failures = _decode_charts(desc.spec.chart_raw or [])
            outcome = await self.backend.install_releases(key, charts)
            manifest_statuses = None
        else:
            manifests, failures = _decode_manifests(desc.spec.raw or [])
            outcome = await self.backend.apply(key, manifests)
            manifest_statuses = await self._manifest_statuses(outcome)
        failures += outcome.failures
        if not failures:
            await self.backend.prune(key, outcome.applied)
        status = DescriptionStatus(
            phase=DescriptionPhase.FAILURE if failures else DescriptionPhase.SUCCESS,
            reason="; ".join(failures) or None,
            manifest_statuses=manifest_statuses,
        )
        await self._write_status(key, status)
        await self._record(key, desc, status)
        if failures:
            raise DeployError(status.reason)

    async def _manifest_statuses(self, outcome: ApplyOutcome) -> list[ManifestStatus]:
        return [
            ManifestStatus(
                api_version=ref.api_version,
                kind=ref.kind,
                namespace=ref.namespace or None,
                name=ref.name,
                observed_status=await self.backend.observed_status(ref) or {},
            )
            for ref in outcome.applied
        ]

    async def _write_status(self, key: str, status: DescriptionStatus) -> None:
        current = await self.statuses.get(key)
        if current is not None and current.value == status:
            return
        await self.statuses.put(key, status, current.revision if current else 0)

    async def _record(self, key: str, desc: Description, status: DescriptionStatus) -> None:
        """One Event per outcome of each version of the Description, not one per reconcile."""
        outcome = (self.informer.revision(key), status.reason)
        if self._reported.get(key) == outcome:
            return
        self._reported[key] = outcome
        name = desc.namespaced_name()
        if status.phase is DescriptionPhase.SUCCESS:
            self._log.info("description.deployed", description=key)
            await self.recorder.normal(desc, "SuccessfullyDeployed", f"successfully deployed Description {name}")
        else:
            self._log.warning("description.failed", description=key, reason=status.reason)
            message = f"failed to deploy Description {name}: {status.reason}"
            await self.recorder.warning(desc, "UnSuccessfullyDeployed", message)

    async def _remove(self, key: str) -> None:
        pruned = await self.backend.prune(key, ())
        if await self.statuses.get(key) is not None:
            await self.statuses.delete(key)
        if self._reported.pop(key, None) is not None or pruned:
            self._log.info("description.removed", description=key, objects=len(pruned))

"""Deploys one Description into the child and says how it went, whoever asked.

The same steps serve both sync directions: the Description controller calls them for what it
pulls (Pull, Dual without AppPusher), the push responder for what the hub pushes (Push, Dual with
AppPusher). Apply every object (Generic) or HelmRelease (Helm: one per chart, with its values),
then prune what this Description applied before and no longer names, but only when everything
applied: a failed apply never deletes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from clusternet_nats.agent.backends.base import ApplyOutcome, ClusterBackend, ObjectRef, RawObject
from clusternet_nats.api.apps import (
    DeployerType,
    Description,
    DescriptionPhase,
    DescriptionStatus,
    HelmReleaseStatus,
    ManifestStatus,
)
from clusternet_nats.domain.helmreleases import FAILED, ChartRelease, chart_status, releases_of
from clusternet_nats.runtime.metrics import APPLY_DURATION
from clusternet_nats.store.tracecontext import span


def _decode_manifests(raw: list[bytes]) -> tuple[list[RawObject], list[str]]:
    manifests: list[RawObject] = []
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


@dataclass(frozen=True)
class Deployed:
    """How a Description deployed, and which of its objects that put back (drift undone)."""

    status: DescriptionStatus
    restored: list[ObjectRef] = field(default_factory=list)


class DescriptionApplier:
    def __init__(self, backend: ClusterBackend) -> None:
        self.backend = backend

    async def deploy(self, key: str, desc: Description) -> DescriptionStatus:
        """Applies Description `key`; the status says Success, or Failure with every reason."""
        return (await self.deploy_restoring(key, desc)).status

    async def deploy_restoring(self, key: str, desc: Description) -> Deployed:
        """`deploy`, also saying which objects the apply put back after drift in the cluster; in an
        `agent.apply` span, its duration in `cnet_agent_apply_duration_seconds`."""
        deployer, started = str(desc.spec.deployer), time.perf_counter()
        with span("agent.apply", attributes={"cnet.description": key, "cnet.deployer": deployer}):
            deployed = await self._deploy(key, desc)
        APPLY_DURATION.labels(deployer, str(deployed.status.phase)).observe(time.perf_counter() - started)
        return deployed

    async def _deploy(self, key: str, desc: Description) -> Deployed:
        if desc.spec.deployer is DeployerType.HELM:
            releases, failures = releases_of(desc)
            outcome = await self.backend.install_releases(key, [release for _, release in releases])
            manifest_statuses = await self._chart_statuses(releases, outcome, failures + outcome.failures)
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
        return Deployed(status, outcome.restored)

    async def remove(self, key: str) -> list[ObjectRef]:
        """Deletes everything Description `key` applied; returns what went."""
        return await self.backend.prune(key, ())

    async def _chart_statuses(
        self, releases: list[ChartRelease], outcome: ApplyOutcome, failures: list[str]
    ) -> list[ManifestStatus]:
        """Each chart's release status (installed ones matched by target namespace and release
        name); one that failed is `failed` with helm's error as notes, as Clusternet reports it."""
        installed = {(ref.namespace, ref.name): ref for ref in outcome.applied}
        statuses = []
        for chart, release in releases:
            ref = installed.get((release.spec.target_namespace, release.spec.release_name or release.name))
            observed = await self.backend.observed_status(ref) if ref is not None else None
            if observed is not None:
                statuses.append(chart_status(chart, HelmReleaseStatus.model_validate(observed)))
            elif ref is None:
                named = [f for f in failures if release.namespaced_name() in f] or failures
                statuses.append(chart_status(chart, HelmReleaseStatus(phase=FAILED, notes="; ".join(named) or None)))
        return statuses

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

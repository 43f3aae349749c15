"""A real Kubernetes cluster as the agent's backend (`--backend kube`).

Applies by server-side apply in install order (Namespaces, then CRDs, each CRD waited for until
Established; the objects of one stage concurrently, at most APPLY_PARALLELISM requests in flight,
since the API server takes one request per object), marks what it applies with its owner,
prunes by listing each kind the owner's record names and deleting what carries the owner's mark
and is no longer wanted (system namespaces are disowned instead: Kubernetes refuses to delete
them), reads status back as the API server reports it (`.status` of the object, as Clusternet's
agent does), installs HelmReleases with the `helm` binary (`helm.py`; releases are a recorded
kind like any other, pruned by uninstalling), and reports facts for heartbeats. Nothing is
remembered in the agent: marks and records live in the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import structlog
from clusternet_nats.agent.backends.apiserver import ApiServer
from clusternet_nats.agent.backends.base import (
    ApplyOutcome,
    ClusterFacts,
    ObjectRef,
    RawObject,
    StatusListener,
    delete_order,
    install_stages,
)
from clusternet_nats.agent.backends.kube import clusterid, facts
from clusternet_nats.agent.backends.kube.apiserver import KubeApiServer
from clusternet_nats.agent.backends.kube.applier import ManifestError, ServerSideApplier, describe, identify
from clusternet_nats.agent.backends.kube.helm import RELEASE_KIND, Helm, release_ref, status_of
from clusternet_nats.agent.backends.kube.ownership import AGENT_NAMESPACE, Kind, mark, owner_of, owner_selector
from clusternet_nats.agent.backends.kube.records import Records
from clusternet_nats.agent.backends.kube.watcher import AppliedWatcher
from clusternet_nats.api.apps import HelmRelease
from clusternet_nats.helm.render import HelmError
from clusternet_nats.kube.discovery import Discovery, Resource, UnknownKind
from clusternet_nats.kube.rest import Json, KubeApi, KubeError, connect

PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", AGENT_NAMESPACE)
"""Never deleted by pruning: Kubernetes forbids the first four, the last holds our records."""

_RETRY_SECONDS = 1.0
APPLY_PARALLELISM = 8
"""Server-side applies in flight at once for one Description (client-go's default QPS is 5, burst 10)."""

log = structlog.get_logger(__name__)


def _kinds(manifests: Sequence[RawObject]) -> set[Kind]:
    kinds = set()
    for manifest in manifests:
        try:
            api_version, kind, _, _ = identify(manifest)
        except ManifestError:
            continue
        kinds.add((api_version, kind))
    return kinds


class KubeCluster:
    def __init__(self, kubeconfig: Path | None, helm: str | Path = "helm") -> None:
        self.kubeconfig = kubeconfig
        self.helm = Helm(helm, kubeconfig)
        self._api: KubeApi | None = None
        self._apiserver: KubeApiServer | None = None
        self._started = False
        self._listeners: list[StatusListener] = []
        self._drift_listeners: list[StatusListener] = []

    @property
    def api(self) -> KubeApi:
        assert self._api is not None, "KubeCluster.start() first"
        return self._api

    # -- ClusterBackend -----------------------------------------------------------------------

    async def start(self) -> None:
        """Connects, and makes the agent's namespace; does nothing when already started."""
        if self._started:
            return
        if self._api is None:
            self._api = await connect(self.kubeconfig)
            self.discovery = Discovery(self.api)
            self.applier = ServerSideApplier(self.api, self.discovery)
            self.records = Records(self.api)
            self.watcher = AppliedWatcher(self.api)
            self.watcher.listeners = self._listeners
            self.watcher.drift_listeners = self._drift_listeners
        await self.records.ensure_namespace()
        self._started = True
        log.info("kube.connected", server=self.api.server)

    async def close(self) -> None:
        if self._api is not None:
            await self.watcher.close()
            if self._apiserver is not None:
                await self._apiserver.close()
            await self._api.close()

    async def wait_cluster_id(self) -> str:
        """Starts and reads the cluster's id, retrying until the API server answers."""
        while True:
            try:
                await self.start()
                return await clusterid.cluster_id(self.api)
            except KubeError as err:
                log.warning("kube.unreachable", error=str(err))
                await asyncio.sleep(_RETRY_SECONDS)

    def on_status_change(self, listener: StatusListener) -> None:
        self._listeners.append(listener)

    def on_drift(self, listener: StatusListener) -> None:
        self._drift_listeners.append(listener)

    async def apply(self, owner: str, manifests: Sequence[RawObject]) -> ApplyOutcome:
        outcome = ApplyOutcome()
        await self.records.add(owner, _kinds(manifests))
        limit = asyncio.Semaphore(APPLY_PARALLELISM)

        async def one(manifest: RawObject) -> tuple[ObjectRef, Resource, Json] | str:
            async with limit:
                try:
                    return await self.applier.apply(mark(manifest, owner))
                except ManifestError as err:
                    return str(err)
                except (UnknownKind, KubeError) as err:
                    return f"{describe(manifest)}: {err}"

        for stage in install_stages(manifests):
            for result in await asyncio.gather(*(one(manifest) for manifest in stage)):
                if isinstance(result, str):
                    outcome.failures.append(result)
                    continue
                ref, resource, applied = result
                self.watcher.watch(resource)
                outcome.applied.append(ref)
                if self.watcher.applied(ref, owner, applied):
                    outcome.restored.append(ref)
        return outcome

    async def install_releases(self, owner: str, releases: Sequence[HelmRelease]) -> ApplyOutcome:
        outcome = ApplyOutcome()
        await self.records.add(owner, {RELEASE_KIND})
        for release in releases:
            ref = release_ref(release)
            try:
                await self.helm.ensure(release, owner)
            except HelmError as err:
                outcome.failures.append(f"HelmRelease {release.namespaced_name()} ({ref}): {err}")
                continue
            outcome.applied.append(ref)
        return outcome

    async def prune(self, owner: str, keep: Collection[ObjectRef]) -> list[ObjectRef]:
        found: dict[ObjectRef, Resource] = {}
        recorded = await self.records.kinds(owner)
        releases = [r for r in await self.helm.owned(owner) if r not in keep] if RELEASE_KIND in recorded else []
        for api_version, kind in sorted(recorded - {RELEASE_KIND}):
            try:
                resource = await self.discovery.resource(api_version, kind)
            except UnknownKind:
                continue  # its CRD is gone, and with it every instance
            listing = await self.api.request("GET", resource.path(), {"labelSelector": owner_selector(owner)})
            for obj in listing.get("items") or []:
                meta = obj["metadata"]
                ref = ObjectRef(api_version, kind, meta.get("namespace", ""), meta["name"])
                if owner_of(obj) == owner and ref not in keep and "deletionTimestamp" not in meta:
                    found[ref] = resource
        for ref in releases:
            await self.helm.uninstall(ref)
        doomed = delete_order(found)
        for ref in doomed:
            self.watcher.forget(ref)
            if ref.kind == "Namespace" and ref.name in PROTECTED_NAMESPACES:
                await self.applier.disown(found[ref], ref)
            else:
                await self.applier.delete(found[ref], ref)
        self.watcher.retain(owner, keep)
        kept = {(r.api_version, r.kind) for r in keep}
        if keep and kept != recorded:
            await self.records.save(owner, kept)
        elif not keep:
            await self.records.drop(owner)
        if doomed:
            log.info("kube.pruned", owner=owner, objects=[str(r) for r in doomed])
        return releases + doomed

    async def observed_status(self, ref: ObjectRef) -> dict[str, Any] | None:
        if (ref.api_version, ref.kind) == RELEASE_KIND:
            release = await self.helm.status(ref.name, ref.namespace)
            return None if release is None else status_of(release).to_json_dict()
        resource = await self.discovery.resource(ref.api_version, ref.kind)
        obj = await self.api.get(resource.path(ref.namespace, ref.name))
        if obj is None:
            return None
        status = obj.get("status")
        return dict(status) if isinstance(status, dict) else {}

    async def owners(self) -> set[str]:
        return await self.records.owners()

    async def facts(self) -> ClusterFacts:
        return await facts.gather(self.api)

    def apiserver(self) -> ApiServer:
        """The child's API server for the hub's proxy, over this backend's connection (started)."""
        if self._apiserver is None:
            self._apiserver = KubeApiServer(self.api.client)
        return self._apiserver

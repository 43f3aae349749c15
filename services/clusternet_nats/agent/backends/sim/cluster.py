"""A simulated child cluster: an API server's storage and admission, a scheduler, controllers.

It implements `ClusterBackend` well enough that everything above it (applying, pruning,
status reporting, heartbeats) runs as it would against Kubernetes, in milliseconds and with
no cluster: objects are admitted and stamped, workloads get pods placed on sized nodes and
report replicas from that. Helm charts are rendered for real when the cluster has a `Renderer`
(`helm template` with the release's values, cached across clusters: libs/helm/render.py) and
their objects stored like applied ones, labelled with their release, so workloads report
replicas from the chart's own Deployments; without one (no helm binary) a release is only
recorded. Nothing here awaits between reading and writing its tables (a render completes
before the writes start), so concurrent reconciles see each other's changes whole.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import structlog
from clusternet_nats.agent.backends.apiserver import ApiServer
from clusternet_nats.agent.backends.base import (
    ApplyOutcome,
    ClusterFacts,
    NodeFacts,
    ObjectRef,
    RawObject,
    StatusListener,
    delete_order,
    install_order,
)
from clusternet_nats.agent.backends.sim import nodes, workloads
from clusternet_nats.agent.backends.sim.admission import AdmissionError, admit, namespace_body, namespace_ref
from clusternet_nats.agent.backends.sim.drift import AppliedObjects
from clusternet_nats.agent.backends.sim.persistence import StateFile
from clusternet_nats.agent.backends.sim.store import ObjectTable, SimObject, json_copy
from clusternet_nats.api.apps import HelmRelease
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.api.loader import CLUSTER_SCOPED_KINDS
from clusternet_nats.domain.helmreleases import values_of
from clusternet_nats.helm.render import ChartRef, HelmError, Rendered, Renderer

K8S_VERSION = "v1.30.0-sim"
PLATFORM = "linux/amd64"
RELEASE_API_VERSION = "helm.sim.clusternet.io/v1"
RELEASE_LABEL = "helm.sim.clusternet.io/release"
"""On each object a release rendered: `<namespace>.<release name>` (Helm keeps this in its manifest)."""
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Present in every cluster, and never deleted: Kubernetes forbids it."""

log = structlog.get_logger(__name__)


class SimCluster:
    def __init__(
        self, name: str, sizing: nodes.Sizing, state_dir: Path | None = None, renderer: Renderer | None = None
    ) -> None:
        self.name = name
        self.renderer = renderer
        self.nodes = sizing.build(name)
        self.objects = ObjectTable()
        self._state = StateFile(state_dir, name, self._snapshot) if state_dir else None
        self._listeners: list[StatusListener] = []
        self._drift_listeners: list[StatusListener] = []
        self.applied = AppliedObjects(self._drifted, name)
        self.objects.on_change(self.applied.heard)
        self._placement = workloads.Placement()
        self._apiserver: ApiServer | None = None
        self._log = log.bind(cluster=name)

    # -- ClusterBackend -----------------------------------------------------------------------

    async def start(self) -> None:
        state = await self._state.load() if self._state else None
        if state is not None:
            self.objects.restore(state)
            self.applied.restore(state.get("applied") or [])
            self._log.info("sim.state_loaded", objects=sum(1 for _ in self.objects))
        for name in SYSTEM_NAMESPACES:
            if self.objects.get(namespace_ref(name)) is None:
                self.objects.put(namespace_ref(name), namespace_body(name))
        self._reschedule(acting_owner=None)

    async def close(self) -> None:
        if self._state is not None:
            await self._state.close()

    def _snapshot(self) -> dict[str, Any]:
        """The state file's content: the objects, and which fields of them the agent applied."""
        return {**self.objects.snapshot(), "applied": self.applied.snapshot()}

    def on_status_change(self, listener: StatusListener) -> None:
        self._listeners.append(listener)

    def on_drift(self, listener: StatusListener) -> None:
        self._drift_listeners.append(listener)

    async def apply(self, owner: str, manifests: Sequence[RawObject]) -> ApplyOutcome:
        outcome = ApplyOutcome()
        changed: set[ObjectRef] = set()
        for manifest in install_order(manifests):
            try:
                ref, body = admit(self.objects, owner, manifest)
            except AdmissionError as err:
                outcome.failures.append(str(err))
                continue
            written, restored = self.applied.write(self.objects, ref, body)
            if written:
                changed.add(ref)
            outcome.applied.append(ref)
            if restored:
                outcome.restored.append(ref)
        self._changed(owner, changed)
        return outcome

    async def install_releases(self, owner: str, releases: Sequence[HelmRelease]) -> ApplyOutcome:
        outcome = ApplyOutcome()
        changed: set[ObjectRef] = set()
        for release in releases:
            spec, namespace = release.spec, release.spec.target_namespace
            ref = ObjectRef(RELEASE_API_VERSION, "Release", namespace, spec.release_name or release.name)
            try:
                rendered = await self._render(release, ref)
            except HelmError as err:
                outcome.failures.append(f"{ref}: {err}")
                continue
            if self.objects.get(namespace_ref(namespace)) is None:
                if not spec.create_namespace:
                    outcome.failures.append(f'{ref}: namespaces "{namespace}" not found')
                    continue
                self.objects.put(namespace_ref(namespace), namespace_body(namespace))
                changed.add(namespace_ref(namespace))
            body = {
                "apiVersion": ref.api_version,
                "kind": ref.kind,
                "metadata": {"name": ref.name, "namespace": namespace, "labels": {APPLIED_BY_DESCRIPTION: owner}},
                "spec": spec.to_json_dict(),
            }
            if rendered is not None:
                try:
                    changed |= self._install_rendered(owner, ref, rendered)
                except AdmissionError as err:
                    outcome.failures.append(f"{ref}: {err}")
                    continue
            if self.objects.put(ref, body):
                changed.add(ref)
                obj = self.objects.get(ref)
                assert obj is not None
                self.objects.set_status(ref, {"phase": "deployed", "version": obj.generation})
            outcome.applied.append(ref)
        self._changed(owner, changed)
        return outcome

    async def _render(self, release: HelmRelease, ref: ObjectRef) -> Rendered | None:
        if self.renderer is None:
            return None
        spec = release.spec
        chart = ChartRef(spec.repo, spec.chart, spec.version, bool(spec.plain_http))
        return await self.renderer.render(chart, ref.name, ref.namespace, values_of(release))

    def _install_rendered(self, owner: str, release: ObjectRef, rendered: Rendered) -> set[ObjectRef]:
        """Stores what the chart rendered (all or nothing, as an atomic install) and deletes what
        an earlier revision rendered and this one does not; the refs changed."""
        mark = _release_mark(release)
        admitted: list[tuple[ObjectRef, dict[str, Any]]] = []
        for manifest in rendered:
            meta = manifest.setdefault("metadata", {})
            if not meta.get("namespace") and manifest.get("kind") not in CLUSTER_SCOPED_KINDS:
                meta["namespace"] = release.namespace
        for raw in install_order(rendered):
            ref, body = admit(self.objects, owner, raw)
            body["metadata"]["labels"][RELEASE_LABEL] = mark
            admitted.append((ref, body))
        changed = {ref for ref, body in admitted if self.objects.put(ref, body)}
        kept = {ref for ref, _ in admitted}
        for obj in self.objects:
            if _release_of(obj) == mark and obj.ref not in kept:
                changed |= {o.ref for o in self._delete(obj.ref)}
        return changed

    async def prune(self, owner: str, keep: Collection[ObjectRef]) -> list[ObjectRef]:
        releases = {_release_mark(ref) for ref in keep if ref.api_version == RELEASE_API_VERSION}
        doomed = delete_order(
            [o.ref for o in self.objects if o.owner == owner and o.ref not in keep and _release_of(o) not in releases]
        )
        gone: list[SimObject] = []
        disowned: set[ObjectRef] = set()
        for ref in doomed:
            self.applied.forget(ref)
            if ref.kind == "Namespace" and ref.name in SYSTEM_NAMESPACES:
                self._disown(ref)
                disowned.add(ref)
            else:
                gone += self._delete(ref)
        self._changed(owner, {o.ref for o in gone} | disowned)
        self._notify({o.owner for o in gone if o.owner and o.owner != owner})
        if doomed:
            self._log.info("sim.pruned", owner=owner, objects=[str(r) for r in doomed])
        return doomed

    async def observed_status(self, ref: ObjectRef) -> dict[str, Any] | None:
        obj = self.objects.get(ref)
        return None if obj is None else json_copy(obj.body.get("status") or {})

    async def owners(self) -> set[str]:
        return {o.owner for o in self.objects if o.owner}

    async def facts(self) -> ClusterFacts:
        total = nodes.total(self.nodes)
        placed = self._placement
        return ClusterFacts(
            k8s_version=K8S_VERSION,
            platform=PLATFORM,
            ready_nodes=len(self.nodes),
            not_ready_nodes=0,
            capacity=total,
            allocatable=dict(total),
            cpu_usage=nodes.cpu_text(placed.cpu),
            memory_usage=nodes.memory_text(placed.memory),
            running_pods=placed.pods,
            total_pods=placed.pods + placed.pending,
            nodes=tuple(self._node_facts()),
            apiserver_url=f"sim://{self.name}",
        )

    def _node_facts(self) -> list[NodeFacts]:
        used = self._placement.per_node or [(0, 0, 0)] * len(self.nodes)
        owners = self._placement.owners or [{} for _ in self.nodes]
        return [node.facts(*use, held) for node, use, held in zip(self.nodes, used, owners, strict=True)]

    def apiserver(self) -> ApiServer:
        """This cluster's objects served as kube-apiserver serves them (sim/apiserver.py), the one
        instance whose history its watches resume from."""
        if self._apiserver is None:
            from clusternet_nats.agent.backends.sim.apiserver import SimApiServer  # it imports this module

            self._apiserver = SimApiServer(self)
        return self._apiserver

    def direct_write(self, ref: ObjectRef, body: dict[str, Any] | None) -> None:
        """A change made in the child itself (through its API server), not by an agent's apply:
        stores the admitted `body`, or deletes (cascading from a Namespace) when None; then
        reschedules, persists and tells the owners of what went."""
        if body is None:
            gone = self._delete(ref)
            self._changed("", {o.ref for o in gone})
            self._notify({o.owner for o in gone if o.owner})
        elif self.objects.put(ref, body):
            self._changed("", {ref})

    # -- inside the cluster ----------------------------------------------------------------

    def _delete(self, ref: ObjectRef) -> list[SimObject]:
        """Deletes, cascading from a Namespace to what it holds; returns every object deleted."""
        obj = self.objects.delete(ref)
        if obj is None:
            return []
        gone = [obj]
        if ref.kind == "Namespace":
            for held in self.objects:
                if held.ref.namespace == ref.name:
                    self.objects.delete(held.ref)
                    gone.append(held)
        return gone

    def _disown(self, ref: ObjectRef) -> None:
        obj = self.objects.get(ref)
        assert obj is not None
        body: dict[str, Any] = json_copy(obj.body)
        body["metadata"]["labels"].pop(APPLIED_BY_DESCRIPTION, None)
        self.objects.put(ref, body, owned=True)

    def _changed(self, acting_owner: str, refs: set[ObjectRef]) -> None:
        """After writes by `acting_owner`: reschedule if workloads moved, tell other owners, persist."""
        if not refs:
            return
        if any(workloads.is_replicated(r) or workloads.is_job(r) for r in refs):
            self._reschedule(acting_owner)
        if self._state is not None:
            self._state.changed()

    def _reschedule(self, acting_owner: str | None) -> None:
        replicated = [o for o in self.objects if workloads.is_replicated(o.ref)]
        self._placement = workloads.place(replicated, self.nodes)
        moved: set[str] = set()
        for obj in self.objects:
            if workloads.is_replicated(obj.ref):
                status = workloads.replicated_status(obj, self._placement.ready[obj.ref])
            elif workloads.is_job(obj.ref):
                status = workloads.job_status(obj)
            else:
                continue
            if self.objects.set_status(obj.ref, status) and obj.owner and obj.owner != acting_owner:
                moved.add(obj.owner)
        self._notify(moved)

    def _drifted(self, owner: str) -> None:
        for listener in self._drift_listeners:
            listener(owner)

    def _notify(self, owners: set[str]) -> None:
        for owner in sorted(owners):
            for listener in self._listeners:
                listener(owner)


def _release_mark(release: ObjectRef) -> str:
    return f"{release.namespace}.{release.name}"


def _release_of(obj: SimObject) -> str | None:
    labels: dict[str, str] = obj.body.get("metadata", {}).get("labels") or {}
    return labels.get(RELEASE_LABEL)

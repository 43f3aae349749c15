"""A simulated cluster's objects served as kube-apiserver serves them, so the hub's proxy (and
kubectl through it) can reach a simulated child like a real one.

It answers discovery (`/api`, `/apis`, each group version: the built-in kinds, the kinds of the
CustomResourceDefinitions the cluster holds, and any other kind it holds), `/version`, get, list
(one namespace or all, `labelSelector`, `fieldSelector` on metadata.name/metadata.namespace,
`limit`/`continue`), watch (chunked `{"type", "object"}` lines from a resourceVersion, ERROR 410
Expired once it is older than the kept history, BOOKMARKs when asked), create, update,
patch (merge, JSON, strategic) and delete, with kube-apiserver's Status objects and wording.
Writes go through the sim's own admission and scheduler, like the agent's applies, so a change
made "directly in the child" reschedules workloads and is seen by the agent's drift handling.

Deliberate departures, for a cluster that exists only in memory:
- no RBAC: the impersonation headers the agent sets are accepted and ignored. A simulated
  cluster trusts its agent, which only forwards what the hub authorised;
- JSON and Tables (sim/tables.py) only: a protobuf body (kubectl's typed `create namespace`)
  is a 415, a client accepting only protobuf a 406;
- Nodes are the sim's sized nodes and pods are derived from workloads (sim/pods.py), both
  read-only; a watch on pods reports the difference between what it last sent and the
  workloads now, so states it did not stay for are coalesced;
- a `continue` token reads the current state after its key rather than a snapshot;
- strategic merge patches guess merge keys (domain/patches.py); server-side apply is a 415;
- a deleted Namespace and what it holds go at once (no Terminating phase).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import random
import string
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

import jsonpatch
from clusternet_nats.agent.backends.apiserver import UpstreamRequest, UpstreamResponse
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim.admission import AdmissionError, admit, namespace_ref
from clusternet_nats.agent.backends.sim.cluster import K8S_VERSION, RELEASE_API_VERSION, SYSTEM_NAMESPACES, SimCluster
from clusternet_nats.agent.backends.sim.nodes import ARCH, OS, resources
from clusternet_nats.agent.backends.sim.pods import pods_of
from clusternet_nats.agent.backends.sim.store import ADDED, DELETED, MODIFIED, Body, SimObject
from clusternet_nats.agent.backends.sim.tables import INCLUDE_OBJECT, table, table_version
from clusternet_nats.api import LabelSelector
from clusternet_nats.api.builtin_kinds import BUILTIN_KINDS, BUILTIN_SHORT_NAMES
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.api.loader import guess_resource
from clusternet_nats.domain.listselectors import field_terms, parse_label_selector
from clusternet_nats.domain.patches import merge_patch, strategic_merge

HISTORY = 1000
"""Changes kept for watches to resume from (kube-apiserver's watch cache keeps a window too);
an older resourceVersion is 410 Expired, and the client lists again."""
BOOKMARK_EVERY = 30.0
"""Seconds between BOOKMARKs on a watch that asked for them and saw nothing."""
ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")
OBJECT_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
_CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
SCALABLE = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")})
"""The kinds with a `/scale` subresource (what `kubectl scale` patches)."""


@dataclass(frozen=True)
class Resource:
    """One resource as discovery lists it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """What kube-apiserver names it in messages: `deployments.apps`, `configmaps`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def holds(self, ref: ObjectRef) -> bool:
        return ref.api_version == self.api_version and ref.kind == self.kind

    @property
    def scalable(self) -> bool:
        return (self.group, self.kind) in SCALABLE

    def discovery(self) -> list[Body]:
        entry: Body = {
            "name": self.plural,
            "singularName": self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        if not self.scalable:
            return [entry]
        scale = {"name": f"{self.plural}/scale", "singularName": "", "namespaced": self.namespaced}
        scale |= {"group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}
        return [entry, scale]


_NODES = Resource("", "v1", "Node", "nodes", False, ("no",), verbs=READ_VERBS)
_PODS = Resource("", "v1", "Pod", "pods", True, ("po",), ("all",), verbs=READ_VERBS)
"""Derived from the sim's nodes and workloads, never stored: read-only."""
_FIXED = (
    Resource("", "v1", "Namespace", "namespaces", False, ("ns",)),
    _NODES,
    _PODS,
    *(Resource(k.group, k.version, k.kind, k.plural, k.namespaced, k.short_names, k.categories) for k in BUILTIN_KINDS),
    Resource(RELEASE_API_VERSION.partition("/")[0], RELEASE_API_VERSION.partition("/")[2], "Release", "releases", True),
)


class _Failure(Exception):
    """An answer other than success: kube-apiserver's Status object."""

    def __init__(self, code: int, reason: str, message: str, details: Body | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.details = code, reason, details or {}

    def status(self) -> Body:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": str(self),
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        }


def _not_found_path() -> _Failure:
    return _Failure(404, "NotFound", "the server could not find the requested resource")


def _not_found(resource: Resource, name: str) -> _Failure:
    details = {"name": name, "group": resource.group, "kind": resource.plural}
    return _Failure(404, "NotFound", f'{resource.qualified} "{name}" not found', details)


def _bad_request(message: str) -> _Failure:
    return _Failure(400, "BadRequest", message)


def _encode(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _labels(body: Body) -> dict[str, str]:
    labels: dict[str, str] = (body.get("metadata") or {}).get("labels") or {}
    return labels


@dataclass(frozen=True)
class _Change:
    """One change as watches replay it; labels before and after decide what each watch sees."""

    revision: int
    ref: ObjectRef
    before: Mapping[str, str] | None
    """The labels before the change; None: the object did not exist."""
    after: Mapping[str, str] | None
    """The labels after it; None: deleted."""
    encoded: bytes


@dataclass(frozen=True)
class _Selector:
    labels: LabelSelector
    fields: tuple[tuple[str, bool, str], ...]

    def fields_match(self, ref: ObjectRef) -> bool:
        values = {"metadata.name": ref.name, "metadata.namespace": ref.namespace}
        return all((values[name] == value) == equal for name, equal, value in self.fields)

    def matches(self, ref: ObjectRef, labels: Mapping[str, str] | None) -> bool:
        return labels is not None and self.fields_match(ref) and self.labels.matches(dict(labels))


@dataclass
class _Scope:
    """What a collection request covers: a resource, in one namespace or all."""

    resource: Resource
    namespace: str | None
    selector: _Selector = field(default_factory=lambda: _Selector(LabelSelector(), ()))

    def holds(self, ref: ObjectRef) -> bool:
        in_namespace = self.namespace is None or ref.namespace == self.namespace
        return in_namespace and self.resource.holds(ref)


class SimApiServer:
    """`ApiServer` over a SimCluster: built once per cluster (SimCluster.apiserver), it keeps the
    recent changes its watches resume from, from its first request on: no client holds a
    resourceVersion it gave before then, and most of a simulated fleet is never asked, so its
    clusters do not encode every change they make (a tenth of an agent's CPU in a rollout)."""

    def __init__(self, cluster: SimCluster) -> None:
        self._cluster = cluster
        self._objects = cluster.objects
        self._started = datetime.now(UTC).replace(microsecond=0).isoformat()
        self._labels: dict[ObjectRef, dict[str, str]] = {}
        self._history: deque[_Change] = deque(maxlen=HISTORY)
        self._floor = 0
        """The oldest resourceVersion a watch may start from: every change after it is kept."""
        self._recording = False
        self._wake = asyncio.Event()
        self.watching = 0
        """Watches open now (a test waits for its watch to be in place before changing things)."""

    def _record(self) -> None:
        """Starts keeping the history, at the first request."""
        if not self._recording:
            self._recording = True
            self._labels = {o.ref: dict(_labels(o.body)) for o in self._objects}
            self._floor = self._objects.revision
            self._objects.on_change(self._heard)

    def _heard(self, event: str, obj: SimObject) -> None:
        before = self._labels.get(obj.ref)
        after = None if event == DELETED else dict(_labels(obj.body))
        if after is None:
            self._labels.pop(obj.ref, None)
        else:
            self._labels[obj.ref] = after
        if len(self._history) == HISTORY:
            self._floor = self._history[0].revision
        revision = int(obj.body["metadata"]["resourceVersion"])
        self._history.append(_Change(revision, obj.ref, before, after, _encode(obj.body)))
        self._wake.set()
        self._wake = asyncio.Event()

    # -- the exchange ---------------------------------------------------------------------------

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        self._record()
        try:
            if not _accepts_json(request.headers):
                raise _Failure(
                    406,
                    "NotAcceptable",
                    "only the following media types are accepted: application/json, application/json;as=Table",
                )
            return await self._route(request, {k: v[-1] for k, v in parse_qs(request.query).items()})
        except _Failure as failure:
            return _answer(failure.code, failure.status())

    async def _route(self, request: UpstreamRequest, query: dict[str, str]) -> UpstreamResponse:
        parts = [p for p in request.path.split("/") if p]
        method = request.method.upper()
        if parts[:1] == ["version"] and len(parts) == 1:
            _only_get(method)
            return _answer(200, await self._version())
        if parts in (["healthz"], ["livez"], ["readyz"]):
            _only_get(method)
            return UpstreamResponse(200, [("Content-Type", "text/plain; charset=utf-8")], _once(b"ok"))
        if parts[:2] == ["openapi", "v3"]:
            _only_get(method)
            return _answer(200, self._openapi(parts[2:]))
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            _only_get(method)
            return _answer(200, self._root_discovery(parts))
        served = [r for r in self._resources() if r.group == group and r.version == version]
        if not served:
            raise _not_found_path()
        if not rest:
            _only_get(method)
            api_version = f"{group}/{version}" if group else version
            listed = [entry for r in served for entry in r.discovery()]
            listing = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version}
            return _answer(200, listing | {"resources": listed})
        namespace, plural, name, subresource = _split(rest)
        resource = next((r for r in served if r.plural == plural), None)
        if resource is None or (namespace is not None and not resource.namespaced):
            raise _not_found_path()
        scope = _Scope(resource, namespace)
        if subresource is None:
            return await self._verb(method, request, query, scope, name)
        if subresource != "scale" or not resource.scalable or name is None or namespace is None:
            raise _not_found_path()
        return _answer(200, self._scale(method, request, scope, name, query.get("dryRun") == "All"))

    async def _verb(
        self, method: str, request: UpstreamRequest, query: dict[str, str], scope: _Scope, name: str | None
    ) -> UpstreamResponse:
        resource = scope.resource
        if method != "GET" and method not in ("POST", "PUT", "PATCH", "DELETE"):
            raise _method_not_allowed()
        if method != "GET" and resource in (_NODES, _PODS):
            raise _method_not_allowed()
        if resource.namespaced and scope.namespace is None and method != "GET":
            raise _method_not_allowed() if name is None else _not_found_path()
        dry_run = query.get("dryRun") == "All"
        if name is None:
            if method == "POST":
                return _answer(201, self._create(scope, _body(request), dry_run))
            if method != "GET":
                raise _method_not_allowed()
            scope.selector = _selector(query)
            if query.get("watch") in ("1", "true"):
                return _tabled_watch(self._watch(scope, query), scope, request, query)
            return _answer(200, _tabled(self._list(scope, query), scope, request, query))
        if method == "GET":
            if query.get("watch") in ("1", "true"):
                scope.selector = _Selector(LabelSelector(), (("metadata.name", True, name),))
                return _tabled_watch(self._watch(scope, query), scope, request, query)
            return _answer(200, _tabled(self._get(scope, name), scope, request, query))
        if method == "PUT":
            return _answer(200, self._replace(scope, name, _body(request), dry_run))
        if method == "PATCH":
            return _answer(200, self._patch(scope, name, _content_type(request.headers), request.body, dry_run))
        if method == "DELETE":
            return _answer(200, self._delete(scope, name, dry_run))
        raise _method_not_allowed()

    # -- discovery ------------------------------------------------------------------------------

    async def _version(self) -> Body:
        facts = await self._cluster.facts()
        major, _, rest = facts.k8s_version.removeprefix("v").partition(".")
        return {
            "major": major,
            "minor": rest.partition(".")[0],
            "gitVersion": facts.k8s_version,
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": self._started,
            "goVersion": "",
            "compiler": "sim",
            "platform": facts.platform,
        }

    def _resources(self) -> list[Resource]:
        """The built-ins, the CRDs' kinds, then any other kind held (plural guessed as kubectl would)."""
        served: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in _FIXED}
        held: set[tuple[str, str, bool]] = set()
        for obj in self._objects:
            held.add((obj.ref.api_version, obj.ref.kind, bool(obj.ref.namespace)))
            if (obj.ref.api_version, obj.ref.kind) == _CRD:
                for resource in _crd_resources(obj.body):
                    served.setdefault((resource.group, resource.version, resource.plural), resource)
        kinds = {(r.api_version, r.kind) for r in served.values()}
        for api_version, kind, namespaced in sorted(held):
            if (api_version, kind) not in kinds:
                group, _, version = api_version.rpartition("/")
                short = BUILTIN_SHORT_NAMES.get(kind, ())
                resource = Resource(group, version, kind, guess_resource(kind), namespaced, short)
                served.setdefault((group, version, resource.plural), resource)
                kinds.add((api_version, kind))
        return list(served.values())

    def _root_discovery(self, parts: list[str]) -> Body:
        resources = self._resources()
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        groups: dict[str, list[str]] = {}
        for r in resources:
            if r.group and r.version not in groups.setdefault(r.group, []):
                groups[r.group].append(r.version)
        listed = [_api_group(name, versions) for name, versions in sorted(groups.items())]
        if parts == ["apis"]:
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
            return {"kind": "APIGroup", "apiVersion": "v1", **_api_group(parts[1], groups[parts[1]])}
        raise _not_found_path()

    # -- reads ----------------------------------------------------------------------------------

    def _served(self, scope: _Scope) -> Iterable[tuple[ObjectRef, Body]]:
        """What the scope covers, in etcd's key order (namespace, name)."""
        if scope.resource is _NODES:
            return ((ObjectRef("v1", "Node", "", n["metadata"]["name"]), n) for n in self._nodes())
        if scope.resource is _PODS:
            held = [p for o in self._objects if scope.namespace in (None, o.ref.namespace) for p in pods_of(o)]
            return sorted(held, key=lambda item: (item[0].namespace, item[0].name))
        held = [(o.ref, o.body) for o in self._objects if scope.holds(o.ref)]
        return sorted(held, key=lambda item: (item[0].namespace, item[0].name))

    def _nodes(self) -> list[Body]:
        out = []
        for node in self._cluster.nodes:
            size = resources(node.cpu, node.memory, node.pods)
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": node.name,
                        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"sim://{self._cluster.name}/{node.name}")),
                        "resourceVersion": "1",
                        "creationTimestamp": self._started,
                        "labels": dict(node.labels),
                    },
                    "spec": {"taints": [t.to_json_dict() for t in node.taints]} if node.taints else {},
                    "status": {
                        "capacity": size,
                        "allocatable": dict(size),
                        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                        "nodeInfo": {"operatingSystem": OS, "architecture": ARCH, "kubeletVersion": K8S_VERSION},
                    },
                }
            )
        return out

    def _get(self, scope: _Scope, name: str) -> Body:
        ref = self._ref(scope, name)
        found = next((body for r, body in self._served(scope) if r == ref), None)
        if found is None:
            raise _not_found(scope.resource, name)
        return found

    def _list(self, scope: _Scope, query: dict[str, str]) -> Body:
        items = [(ref, body) for ref, body in self._served(scope) if scope.selector.matches(ref, _labels(body))]
        meta: Body = {"resourceVersion": str(self._objects.revision)}
        if "continue" in query:
            after = _continue_key(query["continue"])
            items = [(ref, body) for ref, body in items if (ref.namespace, ref.name) > after]
        limit = _limit(query)
        if limit and len(items) > limit:
            last = items[limit - 1][0]
            meta["continue"] = base64.urlsafe_b64encode(_encode([last.namespace, last.name])).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        resource = scope.resource
        kind = f"{resource.kind}List"
        return {"kind": kind, "apiVersion": resource.api_version, "metadata": meta, "items": [b for _, b in items]}

    def _watch(self, scope: _Scope, query: dict[str, str]) -> UpstreamResponse:
        since = query.get("resourceVersion", "")
        if since not in ("", "0") and not since.isdigit():
            raise _bad_request(f"resourceVersion: Invalid value: {since!r}: must be an integer")
        timeout = _seconds(query.get("timeoutSeconds"))
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        stream = self._events(scope, int(since) if since not in ("", "0") else None, timeout, bookmarks)
        return UpstreamResponse(200, [("Content-Type", JSON), ("Transfer-Encoding", "chunked")], stream)

    async def _events(
        self, scope: _Scope, since: int | None, timeout: float | None, bookmarks: bool
    ) -> AsyncIterator[bytes]:
        """The watch's lines: the current objects first when it gave no resourceVersion, then
        each change after its cursor, until the timeout or the client goes."""
        self.watching += 1
        try:
            async for line in self._lines(scope, since, timeout, bookmarks):
                yield line
        finally:
            self.watching -= 1

    async def _lines(
        self, scope: _Scope, since: int | None, timeout: float | None, bookmarks: bool
    ) -> AsyncIterator[bytes]:
        deadline = None if timeout is None else time.monotonic() + timeout
        derived = scope.resource is _PODS
        shown: dict[ObjectRef, tuple[bytes, bytes]] = {}
        """A derived resource's objects as this watch last reported them (as compared, as sent)."""
        if since is None or derived:
            now = self._objects.revision
            shown = self._matching(scope)
            if since is None:
                for _, encoded in shown.values():
                    yield _line(ADDED, encoded)
            since = now
        elif since < self._floor:
            gone = _Failure(410, "Expired", f"too old resource version: {since} ({self._floor + 1})")
            yield _line("ERROR", _encode(gone.status()))
            return
        cursor = since
        while True:
            wake = self._wake
            if cursor < self._floor:
                gone = _Failure(410, "Expired", f"too old resource version: {cursor} ({self._floor + 1})")
                yield _line("ERROR", _encode(gone.status()))
                return
            changes = []
            for change in reversed(self._history):
                if change.revision <= cursor:
                    break
                changes.append(change)
            for change in reversed(changes):
                cursor = change.revision
                event = None if derived else _event_for(scope, change)
                if event is not None:
                    yield _line(event, change.encoded)
            if derived and changes:
                current = self._matching(scope)
                for ref, (compared, encoded) in current.items():
                    if ref not in shown or shown[ref][0] != compared:
                        yield _line(MODIFIED if ref in shown else ADDED, encoded)
                for ref in shown.keys() - current.keys():
                    yield _line(DELETED, shown[ref][1])
                shown = current
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            wait = min(x for x in (left, BOOKMARK_EVERY if bookmarks else None, 3600.0) if x is not None)
            try:
                async with asyncio.timeout(wait):
                    await wake.wait()
            except TimeoutError:
                if bookmarks:
                    mark = {"kind": scope.resource.kind, "apiVersion": scope.resource.api_version}
                    yield _line("BOOKMARK", _encode(mark | {"metadata": {"resourceVersion": str(cursor)}}))

    def _matching(self, scope: _Scope) -> dict[ObjectRef, tuple[bytes, bytes]]:
        """What the scope selects, each encoded without its resourceVersion (a derived pod's is
        its workload's: a change to the workload alone is no change to the pod) and as sent."""
        out = {}
        for ref, body in self._served(scope):
            if scope.selector.matches(ref, _labels(body)):
                meta = {k: v for k, v in body["metadata"].items() if k != "resourceVersion"}
                out[ref] = (_encode(body | {"metadata": meta}), _encode(body))
        return out

    # -- writes ---------------------------------------------------------------------------------

    def _scale(self, method: str, request: UpstreamRequest, scope: _Scope, name: str, dry_run: bool) -> Body:
        """The `/scale` subresource: an autoscaling/v1 Scale of the workload's replicas."""
        current = self._current(scope, name)
        scale = _scale_of(current.body)
        if method == "GET":
            return scale
        if method == "PATCH":
            content_type = _content_type(request.headers)
            wanted = _patched(scale, content_type, request.body)
        elif method == "PUT":
            wanted = _body(request)
        else:
            raise _method_not_allowed()
        replicas = (wanted.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            why = f"spec.replicas: Invalid value: {replicas!r}: must be greater than or equal to 0"
            message = f'Scale.autoscaling "{name}" is invalid: {why}'
            raise _Failure(422, "Invalid", message, {"name": name, "group": "autoscaling", "kind": "Scale"})
        body = json.loads(_encode(current.body))
        body["spec"]["replicas"] = replicas
        body["metadata"]["resourceVersion"] = (wanted.get("metadata") or {}).get("resourceVersion") or ""
        return _scale_of(self._replace(scope, name, body, dry_run))

    def _openapi(self, parts: list[str]) -> Body:
        """Enough OpenAPI v3 for kubectl to see that every resource takes `fieldValidation` (and so
        validate on the server, which the sim does through its admission), no schemas: the root
        lists each group version, a group version lists each resource's PATCH."""
        served = self._resources()
        paths = {_group_version_path(r): r for r in served}
        if not parts:
            listed = {path: {"serverRelativeURL": f"/openapi/v3/{path}"} for path in sorted(paths)}
            return {"paths": listed}
        wanted = "/".join(parts)
        if wanted not in paths:
            raise _not_found_path()
        operations: Body = {}
        for r in served:
            if _group_version_path(r) != wanted:
                continue
            gvk = {"group": r.group, "version": r.version, "kind": r.kind}
            validation = {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
            patch: Body = {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "patch"}
            patch["parameters"] = [validation]
            scope = "/namespaces/{namespace}" if r.namespaced else ""
            operations[f"/{wanted}{scope}/{r.plural}/{{name}}"] = {"patch": patch}
        info = {"title": "Kubernetes (simulated cluster)", "version": "unversioned"}
        return {"openapi": "3.0.0", "info": info, "paths": operations}

    def _ref(self, scope: _Scope, name: str) -> ObjectRef:
        resource = scope.resource
        return ObjectRef(resource.api_version, resource.kind, scope.namespace or "", name)

    def _create(self, scope: _Scope, body: Body, dry_run: bool) -> Body:
        resource = scope.resource
        meta = _defaulted(scope, body)
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        name = str(meta.get("name") or "")
        if not name:
            message = f"{resource.kind} is invalid: metadata.name: Required value: name or generateName is required"
            raise _Failure(422, "Invalid", message, {"group": resource.group, "kind": resource.kind})
        if self._objects.get(self._ref(scope, name)) is not None:
            details = {"name": name, "group": resource.group, "kind": resource.plural}
            raise _Failure(409, "AlreadyExists", f'{resource.qualified} "{name}" already exists', details)
        return self._store(scope, name, body, dry_run)

    def _replace(self, scope: _Scope, name: str, body: Body, dry_run: bool) -> Body:
        current = self._current(scope, name)
        meta = _defaulted(scope, body)
        if meta.get("name") != name:
            given = meta.get("name")
            raise _bad_request(f"the name of the object ({given}) does not match the name on the URL ({name})")
        wanted = meta.get("resourceVersion")
        if wanted and wanted != current.body["metadata"]["resourceVersion"]:
            resource = scope.resource
            details = {"name": name, "group": resource.group, "kind": resource.plural}
            message = (
                f'Operation cannot be fulfilled on {resource.qualified} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
            raise _Failure(409, "Conflict", message, details)
        body.pop("status", None)
        if "status" in current.body:
            body["status"] = current.body["status"]  # the main resource never writes status
        return self._store(scope, name, body, dry_run)

    def _patch(self, scope: _Scope, name: str, content_type: str, raw: bytes, dry_run: bool) -> Body:
        current = self._current(scope, name)
        return self._replace(scope, name, _patched(current.body, content_type, raw), dry_run)

    def _delete(self, scope: _Scope, name: str, dry_run: bool) -> Body:
        resource = scope.resource
        current = self._current(scope, name)
        if resource.kind == "Namespace" and name in SYSTEM_NAMESPACES:
            details = {"name": name, "group": "", "kind": "namespaces"}
            message = f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            raise _Failure(403, "Forbidden", message, details)
        if not dry_run:
            self._cluster.direct_write(current.ref, None)
        details = {"name": name, "group": resource.group, "kind": resource.plural}
        details["uid"] = current.body["metadata"]["uid"]
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def _current(self, scope: _Scope, name: str) -> SimObject:
        current = self._objects.get(self._ref(scope, name))
        if current is None:
            raise _not_found(scope.resource, name)
        return current

    def _store(self, scope: _Scope, name: str, body: Body, dry_run: bool) -> Body:
        """Admits and stores as the sim's applies do; the owner label stays what the writer sent."""
        if scope.namespace and self._objects.get(namespace_ref(scope.namespace)) is None:
            details = {"name": scope.namespace, "kind": "namespaces"}
            raise _Failure(404, "NotFound", f'namespaces "{scope.namespace}" not found', details)
        owner = _labels(body).get(APPLIED_BY_DESCRIPTION)
        try:
            ref, admitted = admit(self._objects, owner or "", body)
        except AdmissionError as err:
            resource = scope.resource
            details = {"name": name, "group": resource.group, "kind": resource.kind}
            raise _Failure(422, "Invalid", str(err), details) from None
        if owner is None:
            admitted["metadata"]["labels"].pop(APPLIED_BY_DESCRIPTION, None)
            if not admitted["metadata"]["labels"]:
                del admitted["metadata"]["labels"]
        if dry_run:
            return admitted
        self._cluster.direct_write(ref, admitted)
        stored = self._objects.get(ref)
        assert stored is not None
        return stored.body


# -- helpers --------------------------------------------------------------------------------------


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


def _answer(status: int, body: Body) -> UpstreamResponse:
    return UpstreamResponse(status, [("Content-Type", JSON)], _once(_encode(body)))


def _line(event: str, encoded: bytes) -> bytes:
    return b'{"type":"' + event.encode() + b'","object":' + encoded + b"}\n"


def _method_not_allowed() -> _Failure:
    return _Failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def _only_get(method: str) -> None:
    if method != "GET":
        raise _method_not_allowed()


def _accepts_json(headers: Iterable[tuple[str, str]]) -> bool:
    """True unless every type the client accepts is one this server cannot write (protobuf, or a
    JSON rendering other than a Table)."""
    accept = ",".join(v for k, v in headers if k.lower() == "accept")
    if not accept.strip():
        return True
    for entry in accept.split(","):
        media, *params = (p.strip() for p in entry.split(";"))
        rendering = [p for p in params if p.startswith("as=")]
        if media in ("*/*", "application/*", JSON) and rendering in ([], ["as=Table"]):
            return True
    return False


def _include(query: dict[str, str]) -> str:
    include = query.get("includeObject", "Metadata")
    if include not in INCLUDE_OBJECT:
        supported = ", ".join(INCLUDE_OBJECT)
        raise _bad_request(f"includeObject: Unsupported value: {include!r}: supported values: {supported}")
    return include


def _tabled(body: Body, scope: _Scope, request: UpstreamRequest, query: dict[str, str]) -> Body:
    """`body` (an object or a list) as the Table the client prefers, else as it is."""
    version = table_version(request.headers)
    if version is None:
        return body
    include = _include(query)
    if "items" in body:
        meta = body["metadata"]
        return table(scope.resource.kind, body["items"], version, include, meta)
    meta = {"resourceVersion": body["metadata"].get("resourceVersion", "")}
    return table(scope.resource.kind, [body], version, include, meta)


def _tabled_watch(
    response: UpstreamResponse, scope: _Scope, request: UpstreamRequest, query: dict[str, str]
) -> UpstreamResponse:
    """A watch whose events carry Tables (column definitions in the first only) when asked."""
    version = table_version(request.headers)
    if version is None:
        return response
    include, kind, events = _include(query), scope.resource.kind, response.body

    async def converted() -> AsyncIterator[bytes]:
        first = True
        try:
            async for line in events:
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "BOOKMARK":
                    event["object"] = table(kind, [], version, include, obj["metadata"], headers=False)
                elif event["type"] != "ERROR":
                    meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                    event["object"] = table(kind, [obj], version, include, meta, headers=first)
                    first = False
                yield _encode(event) + b"\n"
        finally:
            await response.close()

    return UpstreamResponse(response.status, response.headers, converted())


def _patched(current: Body, content_type: str, raw: bytes) -> Body:
    """`current` with the patch applied, by its content type (server-side apply: 415)."""
    try:
        patch = json.loads(raw or b"null")
    except ValueError as err:
        raise _bad_request(f"the patch is not valid JSON: {err}") from None
    target = json.loads(_encode(current))
    if content_type == JSON_PATCH:
        try:
            patched = jsonpatch.apply_patch(target, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError) as err:
            raise _Failure(422, "Invalid", f"the JSON patch cannot be applied: {err}") from None
    elif content_type in (MERGE_PATCH, STRATEGIC_PATCH):
        if not isinstance(patch, dict):
            raise _bad_request(f"a merge patch must be a JSON object, not {type(patch).__name__}")
        patched = merge_patch(target, patch) if content_type == MERGE_PATCH else strategic_merge(target, patch)
    else:
        accepted = ", ".join((JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH))
        raise _Failure(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: {accepted}",
        )
    if not isinstance(patched, dict):
        raise _Failure(422, "Invalid", "the patched object is not a JSON object")
    return patched


def _content_type(headers: Iterable[tuple[str, str]]) -> str:
    value = next((v for k, v in headers if k.lower() == "content-type"), "")
    return value.split(";")[0].strip().lower()


def _body(request: UpstreamRequest) -> Body:
    """The JSON object a create or update sends; kubectl's typed commands (`create namespace`) send
    protobuf, which the sim cannot read: a 415, as kube-apiserver answers a type it lacks."""
    content_type = _content_type(request.headers)
    if content_type not in ("", JSON):
        raise _Failure(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: {JSON}",
        )
    try:
        body = json.loads(request.body or b"null")
    except ValueError as err:
        raise _bad_request(f"the body of the request is not valid JSON: {err}") from None
    if not isinstance(body, dict):
        raise _bad_request(f"the body of the request must be a JSON object, not {type(body).__name__}")
    return body


def _defaulted(scope: _Scope, body: Body) -> Body:
    """Fills apiVersion, kind and namespace from the URL as kube-apiserver does, and refuses a
    body that names others; returns the body's metadata."""
    resource = scope.resource
    api_version = body.setdefault("apiVersion", resource.api_version)
    if api_version != resource.api_version:
        raise _bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({resource.api_version})"
        )
    kind = body.setdefault("kind", resource.kind)
    if kind != resource.kind:
        raise _bad_request(f"the kind in the data ({kind}) does not match the expected kind ({resource.kind})")
    meta = body.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise _bad_request("metadata: must be a JSON object")
    if scope.namespace and meta.setdefault("namespace", scope.namespace) != scope.namespace:
        raise _bad_request("the namespace of the provided object does not match the namespace sent on the request")
    return meta


def _split(rest: list[str]) -> tuple[str | None, str, str | None, str | None]:
    """(namespace, plural, name, subresource) of a resource path after its group version; a
    namespace's own subresources (status, finalize) are not served."""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    else:
        namespace = None
    if len(rest) > 3:
        raise _not_found_path()
    padded = [*rest, None, None]
    return namespace, rest[0], padded[1], padded[2]


def _selector(query: dict[str, str]) -> _Selector:
    try:
        labels = parse_label_selector(query.get("labelSelector", ""))
    except ValueError as err:
        raise _bad_request(f"unable to parse requirement: {err}") from None
    try:
        fields = field_terms(query.get("fieldSelector", ""), OBJECT_FIELDS)
    except ValueError as err:
        raise _bad_request(str(err)) from None
    return _Selector(labels, tuple(fields))


def _limit(query: dict[str, str]) -> int:
    text = query.get("limit", "0")
    if not text.isdigit():
        raise _bad_request(f"limit: Invalid value: {text!r}: must be a non-negative integer")
    return int(text)


def _seconds(text: str | None) -> float | None:
    if text is None:
        return None
    if not text.isdigit():
        raise _bad_request(f"timeoutSeconds: Invalid value: {text!r}: must be a non-negative integer")
    return float(text)


def _continue_key(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError, binascii.Error):
        raise _bad_request(f"continue key is not valid: {token!r}") from None
    return str(namespace), str(name)


def _event_for(scope: _Scope, change: _Change) -> str | None:
    """What a watch over `scope` sees of the change: a change into its selector is an ADDED, out
    of it a DELETED, as kube-apiserver's watch cache reports it."""
    if not scope.holds(change.ref):
        return None
    was = scope.selector.matches(change.ref, change.before)
    now = scope.selector.matches(change.ref, change.after)
    if was and now:
        return MODIFIED
    if now:
        return ADDED
    return DELETED if was else None


def _scale_of(body: Body) -> Body:
    meta = body["metadata"]
    kept = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    scale_meta = {k: meta[k] for k in kept if k in meta}
    status = body.get("status") or {}
    selector = ((body.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    scale_status: Body = {"replicas": int(status.get("replicas", 0))}
    if selector:
        scale_status["selector"] = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    spec = {"replicas": int((body.get("spec") or {}).get("replicas", 1))}
    scale: Body = {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta, "spec": spec}
    return scale | {"status": scale_status}


def _group_version_path(resource: Resource) -> str:
    return f"apis/{resource.group}/{resource.version}" if resource.group else f"api/{resource.version}"


def _api_group(name: str, versions: list[str]) -> Body:
    preferred = {"groupVersion": f"{name}/{versions[0]}", "version": versions[0]}
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": preferred}


def _crd_resources(body: Body) -> list[Resource]:
    spec = body.get("spec") or {}
    names = spec.get("names") or {}
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str)):
        return []
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    short = tuple(names.get("shortNames") or ())
    categories = tuple(names.get("categories") or ())
    return [
        Resource(group, str(v.get("name")), kind, plural, namespaced, short, categories)
        for v in spec.get("versions") or []
        if isinstance(v, dict) and v.get("served", True) and v.get("name")
    ]


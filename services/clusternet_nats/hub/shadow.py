"""Clusternet's shadow API: ordinary Kubernetes objects written to the hub are stored as Manifests.

Two entry points:

- `/apis/shadow/v1alpha1/objects` (POST create, PUT apply) takes any object whole; its path does
  not say what it touches, so each handler authorizes once the body is read, as the object's own
  path for Clusternet's kinds and Clusternet's shadow path of the wrapped object otherwise.
- `/apis/shadow/v1alpha1/[namespaces/<ns>/]<resource>[/<name>]`, as Clusternet's hub serves it:
  the objects users applied, read back as they wrote them (the Manifests' templates; label and
  field selectors apply to them), created (POST) and replaced (PUT) there as Manifests, and deleted
  by name (their Manifests are).
  kubectl-clusternet sends kubectl's ordinary requests here, and discovery lists under
  `shadow/v1alpha1` every kind users have applied (`shadow_resources`), so
  `kubectl get deploy -n foo` against the hub lists the Deployments applied to namespace foo.
- The same handlers at Kubernetes' own paths of its common built-in kinds (`api.builtin_kinds`:
  `/apis/apps/v1/namespaces/<ns>/deployments`, `/api/v1/namespaces/<ns>/configmaps`, ...), which
  discovery lists, so plain `kubectl apply -f deploy.yaml` reaches the hub too. PATCH takes merge
  and JSON patches, kubectl's strategic merge patch (merge keys guessed, not read from Go types),
  and server-side apply without field ownership. These paths are authorized as what
  they say, like the shadow paths.

Clusternet mirrors every resource of its parent cluster under shadow/v1alpha1; without a parent
to ask, ours lists the kinds the stored Manifests hold, with Kubernetes' short names and `all`
category for the built-in ones, each resource once, at the version Clusternet would serve it from
(`apiversions.normalize_api_group_resources`).

As Clusternet's (pkg/hub/registry/shadow/template), every write here stores the object trimmed of
what a cluster sets on it (`domain/trimming.py`: creationTimestamp, managedFields, resourceVersion, selfLink,
status; a Service's allocated cluster IPs, node ports and health check node port; a Job's
controller-uid selector and labels), and every read answers the template with the Manifest's
generation, uid, resourceVersion, creation and deletion stamps and feed-protection annotation
(`template`). Manifests are named `<resource>.<namespace>.<name>`, or `<resource>.<name>` for a
cluster-scoped kind (`manifest_name`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from aiohttp import web
from clusternet_nats.api import KubeObject, Manifest, ObjectMeta, by_kind
from clusternet_nats.api.builtin_kinds import (
    KubernetesNames,
    builtin_by_plural,
    builtin_group_versions,
)
from clusternet_nats.api.labels import (
    CONFIG_GROUP,
    CONFIG_KIND,
    CONFIG_NAME,
    CONFIG_NAMESPACE,
    CONFIG_VERSION,
    RESERVED_NAMESPACE,
)
from clusternet_nats.api.loader import guess_resource
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH, collection_path, object_path
from clusternet_nats.domain.finalizers import FEED_PROTECTION_ANNOTATION
from clusternet_nats.domain.patches import strategic_merge
from clusternet_nats.domain.trimming import trim
from clusternet_nats.hub.apiversions import normalize_api_group_resources
from clusternet_nats.hub.apply import merge
from clusternet_nats.hub.auth.gate import authorize_as, authorizes_itself
from clusternet_nats.hub.bodies import decode, dry_run, parse, read_body
from clusternet_nats.hub.deletion import delete_options, in_use_warning
from clusternet_nats.hub.errors import ApiError, bad_request, no_such_path
from clusternet_nats.hub.patch import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
    unsupported,
)
from clusternet_nats.hub.resources import written_response
from clusternet_nats.hub.selectors import object_selector
from clusternet_nats.hub.writes import Writer, Written
from clusternet_nats.store.views import ObjectViews

SHADOW_GROUP, SHADOW_VERSION = SHADOW_OBJECTS_PATH.split("/")[2:4]
SHADOW_BASE = f"/apis/{SHADOW_GROUP}/{SHADOW_VERSION}"
MANIFESTS = by_kind(Manifest.KIND)


@dataclass(frozen=True)
class ShadowResource(KubernetesNames):
    """One kind users have applied, as the shadow group serves it."""

    kind: str
    plural: str
    namespaced: bool


def _is_shadowed(manifest: KubeObject) -> bool:
    """A Manifest the shadow API wrote (its config labels name the object)."""
    labels = manifest.metadata.labels or {}
    return bool(labels.get(CONFIG_KIND)) and not labels.get(CONFIG_GROUP, "").endswith(".clusternet.io")


async def shadow_resources(views: ObjectViews) -> list[ShadowResource]:
    """The kinds the Manifests in clusternet-reserved hold, sorted by resource name: a resource held
    in several versions of its group is listed once, as the preferred (Kubernetes' built-in group
    versions) or else highest version has it, as Clusternet's shadow apiserver does."""
    versioned: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for manifest in await views.list(MANIFESTS, RESERVED_NAMESPACE):
        if _is_shadowed(manifest):
            labels = manifest.metadata.labels or {}
            kind = labels[CONFIG_KIND]
            entry: dict[str, Any] = {
                "name": guess_resource(kind),
                "kind": kind,
                "namespaced": bool(labels.get(CONFIG_NAMESPACE)),
            }
            versions = versioned.setdefault(labels.get(CONFIG_GROUP, ""), {})
            versions.setdefault(labels.get(CONFIG_VERSION, ""), {}).setdefault(entry["name"], entry)
    preferred = {group: version for group, version in builtin_group_versions()}
    found: dict[str, ShadowResource] = {}
    for group in sorted(versioned):
        listed = {version: list(entries.values()) for version, entries in versioned[group].items()}
        for entry in normalize_api_group_resources(group, preferred.get(group, ""), listed):
            found.setdefault(entry["name"], ShadowResource(entry["kind"], entry["name"], entry["namespaced"]))
    return sorted(found.values(), key=lambda r: r.plural)


def manifest_name(plural: str, namespace: str | None, name: str, namespaced: bool) -> str:
    """The Manifest that holds an object written through the shadow API: `<resource>.<namespace>.<name>`,
    or `<resource>.<name>` for a cluster-scoped resource (resources and namespaces have no dots, so
    the name cannot be ambiguous)."""
    return f"{plural}.{namespace}.{name}" if namespaced else f"{plural}.{name}"


class Shadow:
    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    @property
    def views(self) -> ObjectViews:
        return self.writer.views

    def add_routes(self, app: web.Application) -> None:
        router = app.router
        router.add_post(SHADOW_OBJECTS_PATH, self.create)
        router.add_put(SHADOW_OBJECTS_PATH, self.apply)
        collections = [SHADOW_BASE + "/{plural}", SHADOW_BASE + "/namespaces/{namespace}/{plural}"]
        for (group, version), kinds in builtin_group_versions().items():
            base = f"/apis/{group}/{version}" if group else f"/api/{version}"
            plurals = "|".join(k.plural for k in kinds)
            collections.append(base + "/{plural:" + plurals + "}")
            collections.append(base + "/namespaces/{namespace}/{plural:" + plurals + "}")
        for collection in collections:
            router.add_get(collection, self.list)
            router.add_post(collection, self.create_at_path)
            router.add_get(collection + "/{name}", self.get)
            router.add_put(collection + "/{name}", self.replace_at_path)
            router.add_patch(collection + "/{name}", self.patch)
            router.add_delete(collection + "/{name}", self.delete)

    @authorizes_itself
    async def create(self, request: web.Request) -> web.Response:
        obj = await _authorized_body(request, named=False)
        return written_response(await self.writer.create(by_kind(obj.kind), obj, dry_run(request)))

    @authorizes_itself
    async def apply(self, request: web.Request) -> web.Response:
        obj = await _authorized_body(request, named=True)
        return written_response(await self.writer.replace(by_kind(obj.kind), obj, dry_run(request)))

    async def create_at_path(self, request: web.Request) -> web.Response:
        """POST to Clusternet's shadow path (what kubectl-clusternet sends): the object is stored as
        a Manifest and answered as applied."""
        manifest = await _manifest_at_path(request)
        return _written_template(await self.writer.create(MANIFESTS, manifest, dry_run(request)))

    async def replace_at_path(self, request: web.Request) -> web.Response:
        manifest = await _manifest_at_path(request)
        return _written_template(await self.writer.replace(MANIFESTS, manifest, dry_run(request)))

    async def _resource(self, request: web.Request) -> ShadowResource:
        plural = request.match_info["plural"]
        builtin = builtin_by_plural(plural)
        known = [ShadowResource(builtin.kind, plural, builtin.namespaced)] if builtin else []
        for resource in known or await shadow_resources(self.views):
            if resource.plural == plural:
                if "namespace" in request.match_info and not resource.namespaced:
                    raise no_such_path()
                return resource
        raise no_such_path()

    async def list(self, request: web.Request) -> web.Response:
        resource = await self._resource(request)
        namespace = request.match_info.get("namespace")
        selector = object_selector(request.query)
        held = [m for m in await self.views.list(MANIFESTS, RESERVED_NAMESPACE) if _holds(m, resource, namespace)]
        items = [obj for obj in map(template, held) if selector.matches(_selectable(obj))]
        body = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
        return web.json_response(body)

    async def get(self, request: web.Request) -> web.Response:
        return web.json_response(template(await self._manifest(request)))

    async def patch(self, request: web.Request) -> web.Response:
        """Patches the applied object and stores it again, with a CAS on the Manifest's version.
        A strategic merge patch (what kubectl's client-side apply sends for built-in kinds) merges
        keyed lists by a guessed merge key (`strategic_merge`). Server-side apply
        merges the applied fields in (creating the object when absent), without field managers."""
        content_type, raw = request.content_type, await request.read()
        if content_type not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH):
            raise unsupported(content_type)
        try:
            manifest: KubeObject | None = await self._manifest(request)
        except ApiError as err:
            if err.code != 404 or content_type != APPLY_PATCH:
                raise
            manifest = None
        if content_type == APPLY_PATCH:
            applied = await _applied_object(raw)
            patched = merge(template(manifest), applied) if manifest is not None else applied
        elif content_type == STRATEGIC_MERGE_PATCH:
            assert manifest is not None
            patched = strategic_merge(template(manifest), await _patch_object(raw))
        else:
            assert manifest is not None
            patched = await apply_patch(template(manifest), content_type, raw)
        metadata = {k: v for k, v in (patched.get("metadata") or {}).items() if k not in _SERVER_METADATA}
        # a copy: trimming is in place, and the patched object shares values with the stored one
        stored = _as_manifest(request, copy.deepcopy({**patched, "metadata": metadata}))
        if manifest is None:
            return _written_template(await self.writer.create(MANIFESTS, stored, dry_run(request)))
        stored.metadata.resource_version = manifest.metadata.resource_version
        return _written_template(await self.writer.replace(MANIFESTS, stored, dry_run(request)))

    async def delete(self, request: web.Request) -> web.Response:
        """Deletes the Manifest that holds the object, so it is withdrawn from every cluster."""
        manifest = await self._manifest(request)
        deleted = await self.writer.delete(MANIFESTS, RESERVED_NAMESPACE, manifest.name, await delete_options(request))
        warning = await in_use_warning(self.writer.views, deleted)
        return web.json_response(template(manifest), headers={"Warning": warning} if warning else None)

    async def _manifest(self, request: web.Request) -> KubeObject:
        resource = await self._resource(request)
        namespace, name = request.match_info.get("namespace"), request.match_info["name"]
        if resource.namespaced and namespace is None:
            raise no_such_path()
        held = manifest_name(resource.plural, namespace, name, resource.namespaced)
        manifest = await self.views.get(MANIFESTS, RESERVED_NAMESPACE, held)
        if manifest is None or not _is_shadowed(manifest):
            message = f'{resource.plural}.{SHADOW_GROUP} "{name}" not found'
            details = {"name": name, "group": SHADOW_GROUP, "kind": resource.plural}
            raise ApiError(404, "NotFound", message, details)
        return manifest


async def _authorized_body(request: web.Request, named: bool) -> KubeObject:
    """The object a write to the objects path carries, once the user may write it there; any kind
    but Clusternet's own is trimmed as the shadow API stores it."""
    body = await read_body(request)
    trim(body)
    obj = parse(body)
    await authorize_as(request, request.method, shadow_path(body, obj, named=named))
    return obj


async def _manifest_at_path(request: web.Request) -> KubeObject:
    """The Manifest that holds the body sent to a shadow path. Clusternet's own kinds are not
    shadowed (as in Clusternet, whose shadow API leaves *.clusternet.io out): they have their own
    paths, where writing them is authorized as what they are."""
    return _as_manifest(request, await read_body(request))


def _as_manifest(request: web.Request, sent: dict[str, Any]) -> KubeObject:
    """The Manifest holding `sent` (trimmed, in place) once it agrees with the path, or a 400 for
    one of our kinds."""
    body = trim(_agree_with_path(request, sent))
    manifest = parse(body)
    if body.get("kind") == manifest.kind:
        raise bad_request(f"{manifest.kind} is served at its own path, not by the shadow API", "kind")
    return manifest


def _agree_with_path(request: web.Request, body: dict[str, Any]) -> dict[str, Any]:
    """The body completed from the shadow path it was sent to, or a 400 naming the field that
    disagrees: its kind must be the path's resource, its namespace and name the path's."""
    kind = body.get("kind")
    plural = request.match_info["plural"]
    if not isinstance(kind, str) or guess_resource(kind) != plural:
        raise bad_request(f"{kind!r} is not a kind served as {plural!r} at {request.path}", "kind")
    metadata = dict(body.get("metadata") or {})
    for field in ("namespace", "name"):
        expected = request.match_info.get(field)
        if expected is not None and metadata.setdefault(field, expected) != expected:
            message = f"{metadata[field]!r} does not match {expected!r} given by the request path"
            raise bad_request(message, f"metadata.{field}")
    return {**body, "metadata": metadata}


async def _applied_object(raw: bytes) -> dict[str, Any]:
    config = await decode(raw, "the apply patch", yaml=True)
    if not isinstance(config, dict):
        raise bad_request("an apply patch must be a Kubernetes object (a mapping)")
    return config


async def _patch_object(raw: bytes) -> dict[str, Any]:
    patch = await decode(raw, "the patch")
    if not isinstance(patch, dict):
        raise bad_request(f"a strategic merge patch must be a JSON object, not {type(patch).__name__}")
    return patch


_SERVER_METADATA = frozenset({"uid", "resourceVersion", "creationTimestamp", "managedFields"})
"""What the hub sets on a stored object (from its Manifest), dropped from a patched one."""


def _written_template(written: Written) -> web.Response:
    return web.json_response(template(written.obj), status=201 if written.created else 200)


def _holds(manifest: KubeObject, resource: ShadowResource, namespace: str | None) -> bool:
    if not _is_shadowed(manifest):
        return False
    labels = manifest.metadata.labels or {}
    if guess_resource(labels.get(CONFIG_KIND, "")) != resource.plural:
        return False
    return namespace is None or labels.get(CONFIG_NAMESPACE) == namespace


def _selectable(obj: dict[str, Any]) -> KubeObject:
    """What a selector reads of an applied object (name, namespace, labels), as an object it takes."""
    metadata = obj.get("metadata") or {}
    meta = ObjectMeta(name=metadata.get("name"), namespace=metadata.get("namespace"), labels=metadata.get("labels"))
    return KubeObject.model_construct(api_version=obj.get("apiVersion", ""), kind=obj.get("kind", ""), metadata=meta)


def _stamp(value: Any) -> Any:
    return value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else value


def template(manifest: KubeObject) -> dict[str, Any]:
    """The object as the shadow API answers it (Clusternet's transformManifest): the template with
    the Manifest's generation, creationTimestamp, resourceVersion, uid, deletionGracePeriodSeconds
    and deletionTimestamp (each removed where the Manifest has none), since that is what the hub
    stores of it, and the Manifest's feed-protection annotation, which says why it is not deleted."""
    assert isinstance(manifest, Manifest)
    obj = dict(manifest.template)
    metadata = dict(obj.get("metadata") or {})
    stored = manifest.metadata
    for key, value in (
        ("generation", stored.generation or None),
        ("creationTimestamp", stored.creation_timestamp),
        ("resourceVersion", stored.resource_version or None),
        ("uid", stored.uid or None),
        ("deletionGracePeriodSeconds", stored.deletion_grace_period_seconds),
        ("deletionTimestamp", stored.deletion_timestamp),
    ):
        if value is None:
            metadata.pop(key, None)
        else:
            metadata[key] = _stamp(value)
    protection = (stored.annotations or {}).get(FEED_PROTECTION_ANNOTATION)
    annotations = metadata.get("annotations")
    if protection is not None:
        kept = annotations if isinstance(annotations, dict) else {}
        metadata["annotations"] = {**kept, FEED_PROTECTION_ANNOTATION: protection}
    obj["metadata"] = metadata
    return obj


def shadow_path(body: dict[str, Any], obj: KubeObject, named: bool) -> str:
    """The path that says what a shadow write touches, for authorization: the kind's own path for
    Clusternet's kinds, else Clusternet's shadow path of the wrapped object
    (`/apis/shadow/v1alpha1/namespaces/<ns>/<resource>[/<name>]`) as Clusternet's shadow API serves it."""
    if body.get("kind") == obj.kind:  # one of ours, not wrapped in a Manifest
        info = by_kind(obj.kind)
        namespace = obj.metadata.namespace
        return object_path(info, namespace, obj.name) if named else collection_path(info, namespace)
    meta = obj.metadata.labels or {}
    namespace = meta.get(CONFIG_NAMESPACE)
    scope = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
    path = f"{SHADOW_BASE}{scope}/{guess_resource(meta.get(CONFIG_KIND, ''))}"
    return f"{path}/{quote(meta.get(CONFIG_NAME, ''), safe='')}" if named else path

"""Create, replace and delete with kube-apiserver's rules, for kind paths and the shadow path.

The server owns uid and creationTimestamp: whatever a body says about them is dropped on create
and replaced by the stored values on update (ObjectStore does the latter). A replace that names
a resourceVersion is a compare-and-set against exactly that version; one that does not is an
apply (create, or replace the latest, retried until it lands: never a 409 because someone else
wrote meanwhile, as kube-apiserver's unconditional update). A dry run goes through the same
checks and skips the write.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import structlog
from clusternet_nats.api import KindInfo, KubeObject
from clusternet_nats.domain.finalizers import held
from clusternet_nats.hub.deletion import DeleteOptions, orphan, wait_for_dependents
from clusternet_nats.hub.errors import already_exists, bad_request, conflict, not_found, store_errors
from clusternet_nats.hub.watch import spec_revision
from clusternet_nats.store import AlreadyExistsError, ConflictError
from clusternet_nats.store.errors import UndecodableError
from clusternet_nats.store.views import ObjectViews

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Written:
    obj: KubeObject
    created: bool


def _as_new(obj: KubeObject) -> KubeObject:
    """A copy stamped with a fresh uid: kept by a create, replaced by the stored uid on update."""
    fresh = obj.model_copy(deep=True)
    fresh.metadata.uid = str(uuid.uuid4())
    fresh.metadata.creation_timestamp = None
    fresh.metadata.resource_version = None
    fresh.metadata.generation = None
    return fresh


def _with_metadata(obj: KubeObject, **fields: Any) -> KubeObject:
    return obj.model_copy(update={"metadata": obj.metadata.model_copy(update=fields)})


class Writer:
    def __init__(self, views: ObjectViews) -> None:
        self.views = views

    async def create(self, info: KindInfo, obj: KubeObject, dry_run: bool) -> Written:
        store = self.views.store(info)
        new = _as_new(obj)
        if dry_run:
            if await store.get(obj.metadata.namespace, obj.name) is not None:
                raise already_exists(info, obj.name)
            return Written(new, created=True)
        with store_errors(info, obj.name):
            created = await store.create(new)
        return Written(await self.views.view(info, created), created=True)

    async def replace(self, info: KindInfo, obj: KubeObject, dry_run: bool) -> Written:
        store = self.views.store(info)
        expected = spec_revision(obj.metadata.resource_version or "")
        current = await store.get(obj.metadata.namespace, obj.name)
        if expected:
            obj = _with_metadata(obj, resource_version=expected)
            if current is None:
                raise not_found(info, obj.name)
            if current.metadata.resource_version != expected:
                raise conflict(info, obj.name)
        if current is not None and obj.metadata.managed_fields is None:  # kept, as kube-apiserver keeps them
            obj = _with_metadata(obj, managed_fields=current.metadata.managed_fields)
        if current is not None and obj.metadata.finalizers is None:  # controllers' finalizers outlive a re-apply
            obj = _with_metadata(obj, finalizers=current.metadata.finalizers)
        if dry_run:
            return Written(obj if current is not None else _as_new(obj), created=current is None)
        with store_errors(info, obj.name):
            if expected:
                written, created = await store.update(obj, current), False
            else:
                new = _as_new(obj)
                written = await store.apply(new)
                created = written.metadata.uid == new.metadata.uid
        return Written(await self.views.view(info, written), created)

    async def replace_status(self, info: KindInfo, obj: KubeObject, dry_run: bool) -> KubeObject:
        """Writes only `status` (to the kind's status bucket), retried on a lost CAS like an
        unconditional update; a resourceVersion in the body must be the object's."""
        current = await self.views.get(info, obj.metadata.namespace, obj.name)
        if current is None:
            raise not_found(info, obj.name)
        expected = spec_revision(obj.metadata.resource_version or "")
        if expected and expected != current.metadata.resource_version:
            raise conflict(info, obj.name)
        status = getattr(obj, "status", None)
        bucket = self.views.status_bucket(info)
        if dry_run or bucket is None or status is None:
            return current if status is None else current.model_copy(update={"status": status})
        data = status.model_dump_json(by_alias=True, exclude_none=True).encode()
        key = self.views.store(info).key_of(obj)
        while True:
            found = await bucket.get(key)
            try:
                await (bucket.write(key, data, found[1]) if found else bucket.create(key, data))
                break
            except (ConflictError, AlreadyExistsError):
                continue
        return await self.views.view(info, current)

    async def delete(self, info: KindInfo, namespace: str | None, name: str, options: DeleteOptions) -> KubeObject:
        """Deletes the version it returns, checked against the preconditions. A change made between
        the read and the delete (a controller's status or finalizer write) is read again and the
        delete retried, as kube-apiserver's guaranteed update does: a 409 only when a precondition
        fails on the latest version."""
        while True:
            obj = await self.views.get(info, namespace, name)
            if obj is None:
                raise not_found(info, name)
            options.check(info, obj)
            if options.dry_run:
                return obj
            if options.propagation == "Orphan":
                await orphan(self.views, info, obj)
            with store_errors(info, name):
                try:
                    deleted = await self.views.store(info).delete_object(namespace, name, obj.metadata.resource_version)
                    break
                except ConflictError:
                    log.debug("delete.retry", kind=info.kind, object=obj.namespaced_name())
        if deleted is None:
            raise not_found(info, name)
        if held(deleted.metadata):  # kube-apiserver's answer: the object, marked, still there
            finalizers = deleted.metadata.finalizers
            log.info("delete.held", kind=info.kind, object=obj.namespaced_name(), finalizers=finalizers)
            return await self.views.view(info, deleted)
        if options.propagation == "Foreground" and not await wait_for_dependents(self.views, info, obj):
            log.warning("delete.dependents_remain", kind=info.kind, object=obj.namespaced_name())
        return obj

    async def delete_undecodable(self, info: KindInfo, err: UndecodableError, options: DeleteOptions) -> dict[str, Any]:
        """Deletes a stored value that no longer decodes (the one way to recover it through the
        API), at the revision that was read; kube-apiserver's Status of a completed delete."""
        if options.uid or options.resource_version:
            raise bad_request("preconditions cannot be checked against a stored value that does not decode",
                              "preconditions")
        if not options.dry_run:
            with store_errors(info, err.key):
                await self.views.store(info).bucket.delete(err.key, err.revision)
            log.warning("delete.undecodable", bucket=err.bucket, key=err.key, revision=err.revision)
        return {
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Success",
            "details": {"name": err.key, "group": info.group, "kind": info.plural},
        }

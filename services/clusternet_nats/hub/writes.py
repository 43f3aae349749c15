"""Create, replace and delete with kube-apiserver's rules, for kind paths and the shadow path.

The server owns uid and creationTimestamp: whatever a body says about them is dropped on create
and replaced by the stored values on update (ObjectStore does the latter). A replace that names
a resourceVersion is a compare-and-set against exactly that version; one that does not is an
apply (create, or replace the latest). A dry run goes through the same checks and skips the write.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from clusternet_nats.api import KindInfo, KubeObject
from clusternet_nats.hub.errors import already_exists, conflict, not_found, store_errors
from clusternet_nats.store.views import ObjectViews


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
        expected = obj.metadata.resource_version
        current = await store.get(obj.metadata.namespace, obj.name)
        if expected:
            if current is None:
                raise not_found(info, obj.name)
            if current.metadata.resource_version != expected:
                raise conflict(info, obj.name)
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

    async def delete(self, info: KindInfo, namespace: str | None, name: str, dry_run: bool) -> KubeObject:
        """Deletes the version it returns: a change made meanwhile is a conflict, not lost silently."""
        obj = await self.views.get(info, namespace, name)
        if obj is None:
            raise not_found(info, name)
        if not dry_run:
            with store_errors(info, name):
                deleted = await self.views.store(info).delete(namespace, name, obj.metadata.resource_version)
            if not deleted:
                raise not_found(info, name)
        return obj

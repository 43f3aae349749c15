"""What a user reads: the object from its bucket with `status` from the controllers' buckets.

Spec and status live apart so users and controllers never compare-and-set the same key; the
user still sees Clusternet's single object. Where a kind's status has a second writer (a
Subscription's: the scheduler's `bindings`), the records are read here and joined by
`domain.subscriptions`.
Lists read each bucket in one pass, never one round trip per object. Shared by the hub (HTTP
reads) and the bridge (status written back onto a parent apiserver's CRDs), so both show the same.
"""

from __future__ import annotations

import asyncio

import structlog
from clusternet_nats.api import KindInfo, KubeObject, all_kinds
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.domain.subscriptions import has_binding, with_binding
from clusternet_nats.store.buckets import BINDINGS_BUCKET
from clusternet_nats.store.keys import namespace_filter
from clusternet_nats.store.kv import JsonBucket, ObjectStore
from clusternet_nats.store.watch import bucket_revision
from nats.js import JetStreamContext
from pydantic import BaseModel, ValidationError

log = structlog.get_logger(__name__)

Objects = list[KubeObject]  # a name for it inside ObjectViews, whose `list` method hides the builtin


def _status_model(info: KindInfo) -> type[BaseModel] | None:
    field = info.model.model_fields.get("status")
    annotation = field.annotation if field is not None else None
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


class ObjectViews:
    """Reads objects of every kind as users see them (status merged)."""

    def __init__(self, js: JetStreamContext) -> None:
        self.js = js
        self._stores: dict[str, ObjectStore[KubeObject]] = {info.kind: ObjectStore(js, info) for info in all_kinds()}
        self._status = {info.kind: JsonBucket(js, info.status_bucket) for info in all_kinds() if info.status_bucket}
        self._bindings = JsonBucket(js, BINDINGS_BUCKET)

    def store(self, info: KindInfo) -> ObjectStore[KubeObject]:
        return self._stores[info.kind]

    async def get(self, info: KindInfo, namespace: str | None, name: str) -> KubeObject | None:
        store = self.store(info)
        key = store.key(namespace, name)
        obj, status, binding = await asyncio.gather(
            store.get(namespace, name), self._get_status(info, key), self._get_binding(info, key)
        )
        return None if obj is None else _merge(info, obj, status, binding)

    async def get_at(
        self, info: KindInfo, namespace: str | None, name: str
    ) -> tuple[KubeObject | None, tuple[int, ...]]:
        """`get`, and revisions of `buckets(info)` read before it: a watch from there misses
        nothing (it may repeat a change the object already shows)."""
        positions = await asyncio.gather(*(bucket_revision(self.js, bucket) for bucket in self.buckets(info)))
        return await self.get(info, namespace, name), tuple(positions)

    async def view(self, info: KindInfo, obj: KubeObject) -> KubeObject:
        """`obj` (just written) with the status currently recorded for it."""
        key = self.store(info).key_of(obj)
        status, binding = await asyncio.gather(self._get_status(info, key), self._get_binding(info, key))
        return _merge(info, obj, status, binding)

    def status_bucket(self, info: KindInfo) -> JsonBucket | None:
        return self._status.get(info.kind)

    def buckets(self, info: KindInfo) -> list[str]:
        """The buckets a kind's view is made of: spec, then status and bindings where it has them."""
        status = [info.status_bucket] if info.kind in self._status and info.status_bucket else []
        return [info.bucket, *status, *([BINDINGS_BUCKET] if has_binding(info) else [])]

    async def list(self, info: KindInfo, namespace: str | None) -> list[KubeObject]:
        return (await self.list_at(info, namespace))[0]

    async def list_at(self, info: KindInfo, namespace: str | None) -> tuple[Objects, tuple[int, ...]]:
        """The objects, and the revision of each of `buckets(info)` they are the state at (where a
        watch continues from)."""
        key_filter = namespace_filter(namespace if info.namespaced else None)
        store = self.store(info)
        (entries, position), statuses, bindings = await asyncio.gather(
            store.bucket.snapshot(key_filter),
            self._all(self._status.get(info.kind), key_filter),
            self._all(self._bindings if has_binding(info) else None, key_filter),
        )
        out = []
        for key, obj in store.decodable(sorted(entries)):
            out.append(_merge(info, obj, statuses[0].get(key), bindings[0].get(key)))
        positions = (position, *(p for found, p in (statuses, bindings) if p is not None))
        return out, positions

    async def _get_status(self, info: KindInfo, key: str) -> bytes | None:
        bucket = self._status.get(info.kind)
        found = await bucket.get(key) if bucket is not None else None
        return None if found is None else found[0]

    async def _get_binding(self, info: KindInfo, key: str) -> bytes | None:
        found = await self._bindings.get(key) if has_binding(info) else None
        return None if found is None else found[0]

    @staticmethod
    async def _all(bucket: JsonBucket | None, key_filter: str) -> tuple[dict[str, bytes], int | None]:
        if bucket is None:
            return {}, None
        entries, position = await bucket.snapshot(key_filter)
        return {key: data for key, data, _ in entries}, position


def _merge(info: KindInfo, obj: KubeObject, status: bytes | None, binding: bytes | None) -> KubeObject:
    model = _status_model(info)
    if model is None:
        return obj
    value = _decode(model, status, info, obj) if status else model()
    if binding:
        value = _with_binding(value, binding, obj)
    setattr(obj, "status", value)  # noqa: B010 - status is declared by the kind, not by KubeObject
    return obj


def _decode(model: type[BaseModel], data: bytes, info: KindInfo, obj: KubeObject) -> BaseModel:
    try:
        return model.model_validate_json(data)
    except ValidationError as err:
        # A status we cannot read must not make the object unreadable; its writer is at fault.
        log.warning("status.unreadable", kind=info.kind, object=obj.namespaced_name(), error=str(err))
        return model()


def _with_binding(status: BaseModel, data: bytes, obj: KubeObject) -> BaseModel:
    try:
        binding = SubscriptionBinding.model_validate_json(data)
    except ValidationError as err:
        log.warning("binding.unreadable", object=obj.namespaced_name(), error=str(err))
        return status
    return with_binding(status, binding, obj)

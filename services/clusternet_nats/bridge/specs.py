"""Users' objects on the parent (Subscriptions, Manifests, HelmCharts, Localizations,
Globalizations) published to NATS, and deleted from NATS before they leave the parent.

The bridge adds Clusternet's finalizer to each object it publishes, so a `kubectl delete`
leaves the object on the parent (with a deletionTimestamp) until the bridge has deleted it from
NATS; only then is the finalizer removed. Publishing is an `ObjectStore.apply`, which writes
nothing when the object is unchanged, so a status the bridge writes back (a new
resourceVersion on the parent) publishes nothing.
"""

from __future__ import annotations

import structlog
from clusternet_nats.api import KindInfo, KubeObject, ObjectError
from clusternet_nats.api.events import Event, EventType, ObjectReference
from clusternet_nats.api.paths import events_path, object_path
from clusternet_nats.bridge.objects import FINALIZER, finalizers, is_deleting, metadata, to_model
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import Json, KubeApi
from clusternet_nats.store import ObjectStore
from clusternet_nats.store.keys import split_key

MERGE_PATCH = "application/merge-patch+json"

log = structlog.get_logger(__name__)


class SpecPublisher:
    """Reconciles one kind: parent object -> NATS object, finalizer on the parent."""

    def __init__(self, api: KubeApi, info: KindInfo, reflector: Reflector, store: ObjectStore[KubeObject]) -> None:
        self.api, self.info, self.reflector, self.store = api, info, reflector, store
        self._log = log.bind(kind=info.kind)

    async def reconcile(self, key: str) -> None:
        obj = self.reflector.get(key)
        if obj is None:
            return  # gone from the parent: only via our finalizer, which already deleted it on NATS
        namespace, name = split_key(key, self.info.namespaced)
        if is_deleting(obj):
            if FINALIZER in finalizers(obj):
                await self.store.delete(namespace or None, name)
                await self._set_finalizers(obj, [f for f in finalizers(obj) if f != FINALIZER])
                self._log.info("bridge.deleted", key=key)
            return
        if FINALIZER not in finalizers(obj):
            await self._set_finalizers(obj, [*finalizers(obj), FINALIZER])
            return  # the patch comes back as an event, and the object is published then
        try:
            model = to_model(obj)
        except ObjectError as err:
            # The CRD's schema let it in; a check only the model makes did not (the error names the field).
            self._log.warning("bridge.invalid", key=key, error=str(err))
            await self._warn(obj, str(err))
            return
        await self.store.apply(model)

    async def _warn(self, obj: Json, message: str) -> None:
        """A Warning Event on the parent, so `kubectl describe` tells the user why nothing happens."""
        meta = metadata(obj)
        involved = ObjectReference(
            api_version=self.info.api_version,
            kind=self.info.kind,
            namespace=meta.get("namespace"),
            name=str(meta["name"]),
            uid=meta.get("uid"),
        )
        event = Event.about(involved, EventType.WARNING, "InvalidObject", message, "clusternet-bridge")
        await self.api.request("POST", events_path(event.namespace), body=event.to_json_dict())

    async def _set_finalizers(self, obj: Json, wanted: list[str]) -> None:
        meta = metadata(obj)
        path = object_path(self.info, meta.get("namespace"), str(meta["name"]))
        patch = {"metadata": {"finalizers": wanted, "resourceVersion": meta.get("resourceVersion")}}
        await self.api.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

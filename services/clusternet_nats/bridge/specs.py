"""Users' objects on the parent (Subscriptions, Manifests, HelmCharts, Localizations,
Globalizations) published to NATS, and deleted from NATS before they leave the parent.

The bridge adds Clusternet's finalizer to each object it publishes, so a `kubectl delete`
leaves the object on the parent (with a deletionTimestamp) until the bridge has deleted it from
NATS; only then is the finalizer removed. Publishing is an `ObjectStore.apply`, which writes
nothing when the object is unchanged, so a status the bridge writes back (a new
resourceVersion on the parent) publishes nothing.
"""

from __future__ import annotations

from typing import TypeGuard

import structlog
from clusternet_nats.api import HelmChart, KindInfo, KubeObject, Manifest, ObjectError, Subscription, by_kind
from clusternet_nats.api.events import Event, EventType, ObjectReference
from clusternet_nats.api.paths import events_path, object_path
from clusternet_nats.bridge.objects import FINALIZER, finalizers, is_deleting, key_of, metadata, to_model
from clusternet_nats.domain.finalizers import (
    FEED_PROTECTION_ANNOTATION,
    FEED_PROTECTION_FINALIZER,
    subscriptions_using,
    without_feed,
)
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import Json, KubeApi, KubeError
from clusternet_nats.store import ObjectStore
from clusternet_nats.store.keys import split_key

MERGE_PATCH = "application/merge-patch+json"
CONFLICT_TRIES = 5
"""Reads and patches of one Subscription before a conflict is left to the work queue."""

log = structlog.get_logger(__name__)


def leaves_subscriptions(feed: KubeObject | None) -> TypeGuard[Manifest | HelmChart]:
    """Whether deleting `feed` takes it out of the Subscriptions naming it: it is in use (the
    deployer's finalizer holds it) and not protected by FeedInUseProtection."""
    held = feed.metadata.finalizers or [] if isinstance(feed, Manifest | HelmChart) else []
    return bool(held) and FEED_PROTECTION_FINALIZER not in held


async def delete_on_nats(
    api: KubeApi, subscriptions: Reflector | None, store: ObjectStore[KubeObject], current: KubeObject
) -> KubeObject | None:
    """Deletes `current` on NATS; returns it as NATS holds it, or None once gone. A feed that
    leaves the parent's Subscriptions leaves them first: once it is deleted on NATS, the deployer
    takes it out of the Subscriptions there and drops its hold, after which nothing would say,
    to a retry or a restarted bridge, that the parent's Subscriptions still had to change."""
    removed = False
    if leaves_subscriptions(current):
        await remove_feed(api, subscriptions, current)
        removed = True
    held = await store.delete_object(current.namespace or None, current.name)
    if not removed and leaves_subscriptions(held):  # the deployer's hold came between the read and the delete
        await remove_feed(api, subscriptions, held)
    return held


async def remove_feed(api: KubeApi, subscriptions: Reflector | None, feed: Manifest | HelmChart) -> None:
    """Takes `feed` out of every parent Subscription naming it, as the deployer does on NATS
    (Clusternet's RemoveFeedFromSubscription): the parent is where the bridge publishes
    Subscriptions from, so the change must be made there to last."""
    for key in subscriptions.keys() if subscriptions is not None else []:
        obj = subscriptions.get(key) if subscriptions is not None else None
        if obj is not None:
            await _take_out(api, obj, feed, key)


async def _take_out(api: KubeApi, obj: Json, feed: Manifest | HelmChart, key: str) -> None:
    """A merge patch carrying the resourceVersion read, so a user's edit made meanwhile is not
    overwritten; on a conflict (often only a status written since), read afresh and try again."""
    for tries in range(1, CONFLICT_TRIES + 1):
        if is_deleting(obj):
            return
        try:
            sub = to_model(obj)
        except ObjectError:
            return
        if not isinstance(sub, Subscription) or not subscriptions_using(feed, [sub]):
            return
        feeds = [f.model_dump(by_alias=True, exclude_none=True) for f in without_feed(sub, feed).spec.feeds]
        meta = metadata(obj)
        path = object_path(by_kind(Subscription.KIND), meta.get("namespace"), str(meta["name"]))
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"feeds": feeds}}
        try:
            await api.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
        except KubeError as err:
            if not err.conflict or tries == CONFLICT_TRIES:
                raise
            fresh = await api.get(path)
            if fresh is None:
                return
            obj = fresh
            continue
        log.info("bridge.feed_removed", subscription=key, feed=feed.namespaced_name())
        return


class SpecPublisher:
    """Reconciles one kind: parent object -> NATS object, finalizer on the parent."""

    def __init__(self, api: KubeApi, info: KindInfo, reflector: Reflector, store: ObjectStore[KubeObject]) -> None:
        self.api, self.info, self.reflector, self.store = api, info, reflector, store
        self.subscriptions: Reflector | None = None
        """The parent's Subscriptions, from which a deleted feed is removed (set by the wiring)."""
        self._log = log.bind(kind=info.kind)

    async def reconcile(self, key: str) -> None:
        obj = self.reflector.get(key)
        if obj is None:
            return  # gone from the parent: only via our finalizer, which already deleted it on NATS
        namespace, name = split_key(key, self.info.namespaced)
        if is_deleting(obj):
            if FINALIZER in finalizers(obj):
                current = await self.store.get(namespace or None, name)  # None: gone from NATS already
                held = current and await delete_on_nats(self.api, self.subscriptions, self.store, current)
                if held is not None and held.metadata.finalizers:
                    await self._held(obj, held)
                    return  # NATS's deletion comes back as a change of this key
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

    async def _held(self, obj: Json, held: KubeObject) -> None:
        """NATS holds the object (its finalizers' owners have work left): the parent keeps it too,
        with the feed-protection annotation copied so `kubectl get -o yaml` says why; a feed
        that is not protected has left the parent's Subscriptions (see `delete_on_nats`)."""
        self._log.info("bridge.deletion_held", key=key_of(obj), finalizers=held.metadata.finalizers)
        message = (held.metadata.annotations or {}).get(FEED_PROTECTION_ANNOTATION)
        if message is not None and (metadata(obj).get("annotations") or {}).get(FEED_PROTECTION_ANNOTATION) != message:
            meta = metadata(obj)
            path = object_path(self.info, meta.get("namespace"), str(meta["name"]))
            patch = {"metadata": {"annotations": {FEED_PROTECTION_ANNOTATION: message}}}
            await self.api.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

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

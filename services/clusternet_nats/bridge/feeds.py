"""The objects a Subscription feeds, read from the parent and published as Manifests.

Clusternet's shadow API is an aggregated apiserver that catches `kubectl apply` of ordinary
objects and stores them as Manifests instead. A plain parent apiserver has no such hook, so the
bridge does the closest thing `kubectl` allows: the user applies the feeds to the parent like
any object, and every object some Subscription names as a feed is mirrored into the Manifest
Clusternet's shadow API would have made (`loader.parse_object` names and labels it). One
reflector per feed type (discovered, so a custom resource whose CRD is itself a feed works once
the CRD is served) follows changes; a feed deleted from the parent, or no longer named by any
Subscription, deletes the Manifest the bridge made for it. Which object a feed names is
`domain.feeds`' rule, with the scope discovery reports, so the bridge mirrors the object the
scheduler and deployer look for.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from clusternet_nats.api import Feed, KubeObject, ObjectError, Subscription, parse_object
from clusternet_nats.bridge.objects import BRIDGED, FEED_METADATA, key_of, to_model
from clusternet_nats.bridge.specs import delete_on_nats
from clusternet_nats.domain.feeds import object_namespace
from clusternet_nats.kube.discovery import Discovery, Resource
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import KubeApi
from clusternet_nats.store import ObjectStore, object_key, split_key

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class FeedRef:
    """A feed as the bridge's work-queue item, encoded `apiVersion|kind|namespace|name`."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, feed: Feed) -> FeedRef:
        return cls(feed.api_version, feed.kind, feed.namespace or "", feed.name)

    @classmethod
    def decode(cls, item: str) -> FeedRef:
        api_version, kind, namespace, name = item.split("|")
        return cls(api_version, kind, namespace, name)

    def encode(self) -> str:
        return "|".join((self.api_version, self.kind, self.namespace, self.name))

    def object_key(self, resource: Resource) -> str:
        """The key in its reflector of the object this feed names, given the scope discovery reports."""
        return object_key(object_namespace(self.namespace, resource.namespaced), self.name)

    def manifest(self, resource: Resource) -> tuple[str, str]:
        """Namespace and name of the Manifest the shadow API would make for this object."""
        namespace, name = split_key(self.object_key(resource), resource.namespaced)
        stub = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        }
        manifest = parse_object(stub)
        return manifest.namespace, manifest.name


class FeedPublisher:
    """Reconciles one feed: parent object -> Manifest on NATS."""

    def __init__(self, api: KubeApi, subscriptions: Reflector, store: ObjectStore[KubeObject]) -> None:
        self.api, self.subscriptions, self.store = api, subscriptions, store
        self.discovery = Discovery(api)
        self.reflectors: dict[Resource, Reflector] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._feeds_of: dict[str, set[str]] = {}
        self.on_feed: Callable[[str], None] = lambda _key: None
        """Called with a feed (encoded) when the object it names changed on the parent."""

    def subscription_changed(self, key: str) -> list[str]:
        """The feeds (encoded) to reconcile after a Subscription changed: those it names now or did."""
        before = self._feeds_of.pop(key, set())
        obj = self.subscriptions.get(key)
        now: set[str] = set()
        if obj is not None:
            try:
                sub = to_model(obj)
            except ObjectError:
                sub = None
            if isinstance(sub, Subscription):
                now = {FeedRef.of(feed).encode() for feed in sub.spec.feeds}
        if now:
            self._feeds_of[key] = now
        return sorted(before | now)

    def referenced(self, item: str) -> bool:
        return any(item in feeds for feeds in self._feeds_of.values())

    async def reconcile(self, item: str) -> None:
        ref = FeedRef.decode(item)
        resource = await self.discovery.resource(ref.api_version, ref.kind)
        obj = None
        if self.referenced(item):
            reflector = self._reflector(resource)
            await reflector.wait_synced()
            obj = reflector.get(ref.object_key(resource))
        if obj is None:
            await self._delete_bridged(*ref.manifest(resource))
            return
        manifest = to_model(obj, FEED_METADATA)
        manifest.metadata.annotations = {**(manifest.metadata.annotations or {}), BRIDGED: "true"}
        await self.store.apply(manifest)

    async def _delete_bridged(self, namespace: str, name: str) -> None:
        current = await self.store.get(namespace, name)
        if current is not None and (current.metadata.annotations or {}).get(BRIDGED) == "true":
            await delete_on_nats(self.api, self.subscriptions, self.store, current)
            log.info("bridge.feed_manifest_deleted", namespace=namespace, name=name)

    def _reflector(self, resource: Resource) -> Reflector:
        reflector = self.reflectors.get(resource)
        if reflector is None:
            reflector = Reflector(self.api, resource.path(), key_of)
            reflector.add_handler(functools.partial(self._object_changed, resource))
            self.reflectors[resource] = reflector
            self._tasks.append(asyncio.create_task(reflector.run()))
        return reflector

    def _object_changed(self, resource: Resource, key: str) -> None:
        for item in {k for feeds in self._feeds_of.values() for k in feeds}:
            ref = FeedRef.decode(item)
            if (ref.api_version, ref.kind) == (resource.api_version, resource.kind) and ref.object_key(resource) == key:
                self.on_feed(item)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

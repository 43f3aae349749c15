"""Tells the Description controller when an applied object changes by itself or is overridden.

Two kinds of change happen in the child without the agent doing anything, and both must make
it reconcile the object's Description again:

* status: a Deployment becomes available, a Job completes (reported, as Clusternet reports it);
* drift: someone changed a field the agent applied (`kubectl edit` in the child, another
  controller) or deleted the object. Clusternet's agent (its Recovery feature) re-applies the
  Description then; so does this one. What counts as drift is `drift.applied_view`: only the
  fields the agent's server-side apply owns, so defaulted fields and fields other managers own
  (an HPA's replicas once a Localization removed them from the manifest) are left alone, and a
  re-apply that changes nothing triggers nothing (no loop).

One reflector (list + watch, resumed and re-listed by `clusternet_nats.kube.reflector`) per
resource type the agent has applied, selecting by the owner label (any value). The backend
tells the watcher what each object looked like right after it applied it (`applied`) and when
it deletes one itself (`forget`); a later difference in the agent's fields, or a deletion, is
drift. Told too often, a listener only reconciles once more; told too rarely, it would report
stale status or leave drift in place, so a reflector that fails for any reason is run again.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import structlog
from clusternet_nats.agent.backends.base import ObjectRef, StatusListener
from clusternet_nats.agent.backends.kube.drift import applied_view
from clusternet_nats.agent.backends.kube.ownership import owner_of
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.kube.discovery import Resource
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import Json, KubeApi
from clusternet_nats.store.cancelling import cancel_and_wait

_RETRY_SECONDS = 1.0

log = structlog.get_logger(__name__)


def _key(obj: Json) -> str:
    """`<namespace>/<name>`: unique within one resource, whatever labels the object has now."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


@dataclass(frozen=True)
class _Applied:
    owner: str
    view: Any
    """`drift.applied_view` of the object as the agent's apply left it."""


Identity = tuple[str, str]
"""An object's uid and resourceVersion: a re-apply that returns the same changed nothing."""


@dataclass(frozen=True)
class _Seen:
    owner: str | None
    status: Any
    identity: Identity


def _identity(obj: Json) -> Identity:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))


class AppliedWatcher:
    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.listeners: list[StatusListener] = []
        self.drift_listeners: list[StatusListener] = []
        self._tasks: dict[Resource, asyncio.Task[None]] = {}
        self._applied: dict[ObjectRef, _Applied] = {}
        self._drifted: dict[ObjectRef, Identity] = {}
        """Objects found drifted, as they were then (deleted: as last seen)."""

    def watch(self, resource: Resource) -> None:
        if resource in self._tasks:
            return
        reflector = Reflector(self.api, resource.path(), _key, {"labelSelector": APPLIED_BY_DESCRIPTION})
        reflector.add_handler(functools.partial(self._changed, resource, reflector, {}))
        self._tasks[resource] = asyncio.create_task(self._run(reflector))

    def applied(self, ref: ObjectRef, owner: str, obj: Json) -> bool:
        """Remembers `obj` as the agent's apply of `ref` just returned it; True when that apply
        put back an object found drifted (the apply changed or recreated it)."""
        self._applied[ref] = _Applied(owner, applied_view(obj))
        drifted = self._drifted.pop(ref, None)
        return drifted is not None and _identity(obj) != drifted

    def forget(self, ref: ObjectRef) -> None:
        """Called before the agent deletes or disowns `ref` itself: its going is no drift."""
        self._applied.pop(ref, None)
        self._drifted.pop(ref, None)

    def retain(self, owner: str, keep: Collection[ObjectRef]) -> None:
        """Forgets what `owner` applied except `keep`, once pruned (some may have gone already)."""
        for ref in [r for r, applied in self._applied.items() if applied.owner == owner and r not in keep]:
            self.forget(ref)

    async def close(self) -> None:
        await cancel_and_wait(self._tasks.values())

    async def _run(self, reflector: Reflector) -> None:
        while True:
            try:
                await reflector.run()
            except Exception as err:  # a broken stream included: status must keep flowing
                log.warning("watch.failed", path=reflector.path, error=repr(err))
                await asyncio.sleep(_RETRY_SECONDS)

    def _changed(self, resource: Resource, reflector: Reflector, seen: dict[str, _Seen], key: str) -> None:
        obj = reflector.get(key)
        owners: set[str] = set()
        before = seen.pop(key, None)
        if obj is not None:
            now = _Seen(owner_of(obj), obj.get("status", {}), _identity(obj))
            seen[key] = now
            if (before is None or (now.owner, now.status) != (before.owner, before.status)) and now.owner:
                owners.add(now.owner)
        elif before is not None and before.owner:
            owners.add(before.owner)
        for owner in sorted(owners):
            for listener in self.listeners:
                listener(owner)
        namespace, _, name = key.partition("/")
        drifted = self._drift(ObjectRef(resource.api_version, resource.kind, namespace, name), obj, before)
        if drifted is not None:
            for listener in self.drift_listeners:
                listener(drifted)

    def _drift(self, ref: ObjectRef, obj: Json | None, before: _Seen | None) -> str | None:
        """Marks `ref` drifted when the agent's fields differ from its apply's; the owner, if so."""
        applied = self._applied.get(ref)
        if applied is None:
            return None
        if obj is None:
            if before is None:
                return None  # never seen here: nothing was lost
            self._drifted[ref] = before.identity
            log.info("drift.deleted", object=str(ref), owner=applied.owner)
            return applied.owner
        if applied_view(obj) == applied.view:
            return None
        self._drifted[ref] = _identity(obj)
        log.info("drift.changed", object=str(ref), owner=applied.owner)
        return applied.owner

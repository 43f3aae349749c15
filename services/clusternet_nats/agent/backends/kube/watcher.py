"""Tells the Description controller when an applied object's status changes by itself.

A Deployment becomes available, a Job completes: nothing the agent did, so nothing would make
it re-read the status. One reflector (list + watch, resumed and re-listed by
`clusternet_nats.kube.reflector`) per resource type the agent has applied, selecting by the
owner label (any value), notifies the owner of each object whose `.status` differs from what
was last seen. Told too often, a listener only reconciles once more; told too rarely, it would
report stale status, so a reflector that fails for any reason is run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import Any

import structlog
from clusternet_nats.agent.backends.base import StatusListener
from clusternet_nats.agent.backends.kube.ownership import owner_of
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.kube.discovery import Resource
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import Json, KubeApi

_RETRY_SECONDS = 1.0

log = structlog.get_logger(__name__)


def _key(obj: Json) -> str:
    """`<owner>\\t<namespace>/<name>`: the owner is known even once the object is deleted."""
    meta = obj.get("metadata") or {}
    return f"{owner_of(obj) or ''}\t{meta.get('namespace', '')}/{meta.get('name', '')}"


class StatusWatcher:
    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.listeners: list[StatusListener] = []
        self._tasks: dict[Resource, asyncio.Task[None]] = {}

    def watch(self, resource: Resource) -> None:
        if resource in self._tasks:
            return
        reflector = Reflector(self.api, resource.path(), _key, {"labelSelector": APPLIED_BY_DESCRIPTION})
        reflector.add_handler(functools.partial(self._changed, reflector, {}))
        self._tasks[resource] = asyncio.create_task(self._run(reflector))

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, reflector: Reflector) -> None:
        while True:
            try:
                await reflector.run()
            except Exception as err:  # a broken stream included: status must keep flowing
                log.warning("watch.failed", path=reflector.path, error=repr(err))
                await asyncio.sleep(_RETRY_SECONDS)

    def _changed(self, reflector: Reflector, seen: dict[str, Any], key: str) -> None:
        obj = reflector.get(key)
        status = None if obj is None else obj.get("status", {})
        if key in seen and seen[key] == status:
            return
        if obj is None:
            seen.pop(key, None)
        else:
            seen[key] = status
        owner = key.partition("\t")[0]
        if owner:
            for listener in self.listeners:
                listener(owner)

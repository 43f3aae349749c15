"""`cnet apply` and `cnet delete -f`: files to objects, and objects to the hub's paths.

Everything is loaded and validated before the first request, so a bad document anywhere
applies nothing. Ordinary Kubernetes objects go to the shadow path, as they would to a
Clusternet hub, and are reported under their own kind with the Manifest that holds them.

The requests of one apply share one keep-alive session and overlap: every object is read back
at once (for "unchanged"), then written in waves, kinds that others live in first (Namespaces,
CRDs), Clusternet's kinds that name other objects (a Subscription's feeds) last, so what the
hub's services react to is already there; within a wave the writes run together.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from clusternet_nats.api import (
    KubeObject,
    Manifest,
    ObjectError,
    ObjectErrors,
    by_kind,
    load_documents,
    load_path,
    parse_object,
)
from clusternet_nats.api.loader import FILE_SUFFIXES, guess_resource
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH, object_path
from clusternet_nats.cli.client import HubClient, HubError
from clusternet_nats.cli.columns import resource_name
from clusternet_nats.cli.resources import SHADOW_GROUP, Resource

PARALLEL = 8
"""Requests of one apply in flight at once (each may take a connection of the session's pool)."""
FIRST_KINDS = frozenset({"Namespace", "CustomResourceDefinition"})
"""Kinds other objects live in or are instances of: written before the rest."""
LAST_KINDS = frozenset({"Subscription", "Localization", "Globalization"})
"""Clusternet's kinds that name other objects (feeds): written once those are."""


def _files(path: Path, recursive: bool) -> list[Path]:
    """A file, or a directory's YAML/JSON files: only its own unless `recursive` (kubectl's -R)."""
    if recursive or not path.is_dir():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in FILE_SUFFIXES)


def load_files(paths: Sequence[Path], recursive: bool = False, stdin: TextIO | None = None) -> list[KubeObject]:
    """Every object in every file or directory (`-`: stdin); raises ObjectErrors listing every problem."""
    objects: list[KubeObject] = []
    errors: list[ObjectError] = []
    for path in paths:
        try:
            if str(path) == "-":
                objects.extend(load_documents((stdin or sys.stdin).read(), "<stdin>"))
                continue
            for file in _files(path, recursive):
                objects.extend(load_path(file))
        except ObjectErrors as err:
            errors.extend(err.errors)
        except ObjectError as err:
            errors.append(err)
    if errors:
        raise ObjectErrors(errors)
    return objects


def _shadowed(obj: KubeObject) -> dict[str, Any] | None:
    """The ordinary object a Manifest was made from, when the loader wrapped it (not user-written)."""
    if not isinstance(obj, Manifest):
        return None
    try:
        return obj.template if parse_object(obj.template) == obj else None
    except ObjectError:
        return None


@dataclass(frozen=True)
class Target:
    """Where one loaded object goes and how to name it to the user."""

    obj: KubeObject
    shadowed: dict[str, Any] | None

    @classmethod
    def of(cls, obj: KubeObject) -> Target:
        return cls(obj, _shadowed(obj))

    @property
    def path(self) -> str:
        info = by_kind(self.obj.kind)
        return object_path(info, self.obj.metadata.namespace, self.obj.name)

    @property
    def read_path(self) -> str:
        """Where the object as applied is read back: its own path, or the shadow API's path of a
        wrapped object (its kind's resource as the hub names it, so no discovery is asked)."""
        if self.shadowed is None:
            return self.path
        kind = str(self.shadowed["kind"])
        namespace = (self.shadowed.get("metadata") or {}).get("namespace")
        shadow = Resource(kind, SHADOW_GROUP, guess_resource(kind), kind.lower(), namespaced=bool(namespace))
        return shadow.path(namespace, self.name)

    @property
    def wave(self) -> int:
        """When it is written: 0 with the Namespaces and CRDs, 2 with what names other objects, else 1."""
        kind = str(self.shadowed["kind"]) if self.shadowed else self.obj.kind
        return 0 if kind in FIRST_KINDS else 2 if self.shadowed is None and kind in LAST_KINDS else 1

    @property
    def resource(self) -> str:
        """`subscription.apps.clusternet.io`, or `deployment.apps` for a wrapped Deployment."""
        if self.shadowed is None:
            return resource_name(by_kind(self.obj.kind))
        group = str(self.shadowed["apiVersion"]).rpartition("/")[0]
        kind = str(self.shadowed["kind"]).lower()
        return f"{kind}.{group}" if group else kind

    @property
    def name(self) -> str:
        return str(self.shadowed["metadata"]["name"]) if self.shadowed else self.obj.name

    def applied(self, outcome: str) -> str:
        """`outcome`: created, configured or unchanged."""
        line = f"{self.resource}/{self.name} {outcome}"
        return f"{line} (manifest {self.obj.namespace}/{self.obj.name})" if self.shadowed else line

    def validated(self) -> str:
        return f"{self.resource}/{self.name} valid (dry run)"


def _body(obj: KubeObject) -> dict[str, Any]:
    body = obj.to_json_dict()
    body.pop("status", None)
    return body


def _same(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether applying `wanted` would change nothing the user wrote (kubectl's "unchanged")."""
    meta, now = wanted.get("metadata") or {}, current.get("metadata") or {}
    if any((meta.get(k) or {}) != (now.get(k) or {}) for k in ("labels", "annotations")):
        return False
    return all(current.get(k) == v for k, v in wanted.items() if k not in ("metadata", "status"))


async def apply_one(client: HubClient, target: Target, current: dict[str, Any] | None) -> str:
    """Creates or replaces one object; "unchanged" (and nothing sent) when `current`, the object as
    the hub holds it at `target.read_path` (None: absent), already is as written."""
    if target.shadowed is None:
        body, put_at = _body(target.obj), target.path
    else:
        body, put_at = target.shadowed, SHADOW_OBJECTS_PATH
    if current is not None and _same(current, body):
        return target.applied("unchanged")
    code, _ = await client.request("PUT", put_at, body)
    return target.applied("created" if code == 201 else "configured")


async def outcome(line: Awaitable[str]) -> str | HubError:
    """The line to print, or the hub's refusal of this request; raises HubError when the hub cannot
    be reached at all (nothing after it can succeed)."""
    try:
        return await line
    except HubError as err:
        if not err.code:
            raise
        return err


async def apply_all(client: HubClient, targets: Sequence[Target]) -> AsyncGenerator[str | HubError]:
    """Applies `targets` (reads at once, writes wave by wave, PARALLEL at a time) and yields each
    one's outcome in the order written: by wave, and within a wave as listed."""
    limit = asyncio.Semaphore(PARALLEL)

    async def read(target: Target) -> dict[str, Any] | None:
        async with limit:
            return await client.get_or_none(target.read_path)

    async def write(target: Target, current: Awaitable[dict[str, Any] | None]) -> str:
        got = await current  # outside the limit: a write waiting for its read holds no slot
        async with limit:
            return await apply_one(client, target, got)

    reads = [asyncio.ensure_future(read(t)) for t in targets]
    writes: list[asyncio.Future[str | HubError]] = []
    try:
        for wave in sorted({t.wave for t in targets}):
            started = [
                asyncio.ensure_future(outcome(write(t, current)))
                for t, current in zip(targets, reads, strict=True)
                if t.wave == wave
            ]
            writes += started
            for task in started:
                yield await task
    finally:
        pending: list[asyncio.Future[Any]] = [*reads, *writes]
        for future in pending:
            future.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def delete_one(client: HubClient, path: str, resource: str, name: str, ignore_not_found: bool = False) -> str:
    """Deletes one object; "" when it was not there and `ignore_not_found`."""
    try:
        await client.request("DELETE", path)
    except HubError as err:
        if err.code == 404 and ignore_not_found:
            return ""
        raise
    return f'{resource} "{name}" deleted'

"""DeleteOptions: kubectl's body (or query) on DELETE, read as kube-apiserver reads it, and what
propagationPolicy means for the objects the deployer derives from a Subscription (its Bases and
Descriptions, labelled with the Subscription's uid; the deployer's sweep deletes those whose
Subscription is gone):

* Background (the default, as for custom resources): the DELETE answers at once; its Bases and
  Descriptions are removed by the deployer.
* Foreground: the same, and the answer waits (up to FOREGROUND_SECONDS) until the deployer has
  removed them, so a client sees the deletion complete.
An object with finalizers is not removed by a DELETE but marked (deletionTimestamp; store/kv.py,
kube-apiserver's rule) and the answer is 200 with the marked object: a Subscription the deployer
has seen carries `apps.clusternet.io/finalizer` and stays until every child has pruned its
objects; a feed in use carries it too, and with FeedInUseProtection `apps.clusternet.io/feed-protection`,
which holds it while Subscriptions use it: the answer then carries a `Warning` header naming
them in Clusternet's words (what kubectl prints), as admission warnings do.
* Orphan: before the Subscription goes, its uid label and owner reference are taken off its
  Bases and Descriptions, so the sweep leaves them where they are (Kubernetes' orphaning).
Kinds other than Subscription have no dependents: all three delete just the object.
Preconditions (uid, resourceVersion) that do not hold are a 409, as on kube-apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog
from aiohttp import web
from clusternet_nats.api import HelmChart, KindInfo, KubeObject, Manifest, Subscription, by_kind
from clusternet_nats.api.labels import SUBS_UID
from clusternet_nats.domain.finalizers import FEED_PROTECTION_FINALIZER, in_use_message, subscriptions_using
from clusternet_nats.hub.bodies import decode, dry_run
from clusternet_nats.hub.errors import ApiError, bad_request, resource
from clusternet_nats.hub.watch import spec_revision
from clusternet_nats.store import ConflictError
from clusternet_nats.store.views import ObjectViews
from clusternet_nats.store.watch import Change, bucket_revision, watch_bucket

log = structlog.get_logger(__name__)

FOREGROUND_SECONDS = 30.0
DEPENDENT_KINDS = {"Subscription": ("Base", "Description")}
PROPAGATION_POLICIES = ("Background", "Foreground", "Orphan")


@dataclass(frozen=True)
class DeleteOptions:
    propagation: str = "Background"
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False

    def check(self, info: KindInfo, obj: KubeObject) -> None:
        """409 when a precondition does not hold for the object about to be deleted."""
        meta = obj.metadata
        if self.uid is not None and self.uid != meta.uid:
            raise _precondition(info, obj, f"UID in precondition: {self.uid}, UID in object meta: {meta.uid}")
        if self.resource_version is not None and spec_revision(self.resource_version) != meta.resource_version:
            raise _precondition(
                info,
                obj,
                f"ResourceVersion in precondition: {self.resource_version}, "
                f"ResourceVersion in object meta: {meta.resource_version}",
            )


def _precondition(info: KindInfo, obj: KubeObject, what: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource(info)} "{obj.name}": Precondition failed: {what}',
        {"name": obj.name, "group": info.group, "kind": info.plural},
    )


async def delete_options(request: web.Request) -> DeleteOptions:
    """The options from the body (optional) and the query; 400 naming a field that is wrong."""
    raw = await request.read()
    body = await decode(raw, "the DeleteOptions body") if raw.strip() else {}
    if not isinstance(body, dict):
        raise bad_request("the request body must be a DeleteOptions object")
    policy = request.query.get("propagationPolicy") or body.get("propagationPolicy") or "Background"
    if policy not in PROPAGATION_POLICIES:
        raise bad_request(f"{policy!r}: supported values: {', '.join(PROPAGATION_POLICIES)}", "propagationPolicy")
    if body.get("orphanDependents") is not None and "propagationPolicy" in body:
        raise bad_request("orphanDependents and propagationPolicy cannot be both set", "propagationPolicy")
    if body.get("orphanDependents") is True:
        policy = "Orphan"
    preconditions = body.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        raise bad_request("must be an object", "preconditions")
    body_dry_run = body.get("dryRun") or []
    if body_dry_run not in ([], ["All"]):
        raise bad_request(f"supported values: 'All', not {body_dry_run!r}", "dryRun")
    return DeleteOptions(
        propagation=policy,
        uid=_text(preconditions, "uid"),
        resource_version=_text(preconditions, "resourceVersion"),
        dry_run=dry_run(request) or bool(body_dry_run),
    )


def _text(preconditions: dict[str, object], key: str) -> str | None:
    value = preconditions.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_request("must be a string", f"preconditions.{key}")
    return value


async def in_use_warning(views: ObjectViews, obj: KubeObject) -> str | None:
    """The `Warning` header value for a feed whose deletion feed protection holds, else None."""
    finalizers = obj.metadata.finalizers or []
    if not isinstance(obj, Manifest | HelmChart) or FEED_PROTECTION_FINALIZER not in finalizers:
        return None
    subscriptions = await views.store(by_kind(Subscription.KIND)).list()
    users = subscriptions_using(obj, (sub for sub in subscriptions if isinstance(sub, Subscription)))
    return None if not users else warning_header(in_use_message(obj, users))


def warning_header(message: str) -> str:
    """RFC 7234 warn-code 299 with agent "-", as kube-apiserver sends warnings (quotes escaped)."""
    escaped = message.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


async def _dependents(views: ObjectViews, kinds: tuple[str, ...], uid: str) -> list[tuple[KindInfo, KubeObject]]:
    found = []
    for kind in kinds:
        info = by_kind(kind)
        found += [(info, o) for o in await views.store(info).list() if (o.metadata.labels or {}).get(SUBS_UID) == uid]
    return found


async def orphan(views: ObjectViews, info: KindInfo, obj: KubeObject) -> None:
    """Detaches the object's dependents (label and owner reference), each by a CAS, re-read on a
    lost one, so the deployer's sweep keeps them."""
    uid = obj.metadata.uid or ""
    for dependent_info, dependent in await _dependents(views, DEPENDENT_KINDS.get(info.kind, ()), uid):
        store = views.store(dependent_info)
        current: KubeObject | None = dependent
        while current is not None and (current.metadata.labels or {}).get(SUBS_UID) == uid:
            meta = current.metadata
            labels = {k: v for k, v in (meta.labels or {}).items() if k != SUBS_UID}
            owners = [ref for ref in meta.owner_references or [] if ref.uid != uid]
            detached = current.model_copy(
                update={"metadata": meta.model_copy(update={"labels": labels, "owner_references": owners or None})}
            )
            try:
                await store.update(detached, current)
                log.info("delete.orphaned", kind=dependent_info.kind, object=current.namespaced_name(), owner=uid)
                break
            except ConflictError:
                current = await store.get(meta.namespace, current.name)


async def wait_for_dependents(views: ObjectViews, info: KindInfo, obj: KubeObject) -> bool:
    """Whether the deleted object's dependents were all removed within FOREGROUND_SECONDS;
    re-checked on every change to their buckets, not on a timer."""
    kinds = DEPENDENT_KINDS.get(info.kind, ())
    if not kinds:
        return True
    uid = obj.metadata.uid or ""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FOREGROUND_SECONDS
    async with contextlib.AsyncExitStack() as stack:
        queue: asyncio.Queue[Change] = asyncio.Queue()
        for kind in kinds:
            bucket = by_kind(kind).bucket
            after = await bucket_revision(views.js, bucket)
            changes = await stack.enter_async_context(watch_bucket(views.js, bucket, ">", after))
            task = asyncio.create_task(_forward(changes, queue))
            stack.callback(task.cancel)
        while await _dependents(views, kinds, uid):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await queue.get()
            while not queue.empty():
                queue.get_nowait()
    return True


async def _forward(changes: AsyncIterator[Change], queue: asyncio.Queue[Change]) -> None:
    async for change in changes:
        queue.put_nowait(change)

"""Converging one derived object (Base, Description) on its desired content with CAS writes.

The current object comes from an informer cache and carries the revision it was read at, so a
write based on a stale cache fails with ConflictError and the work queue retries on fresher
data. Labels the deployer does not own are kept, as Clusternet's update merges them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable
from enum import StrEnum
from typing import TypeVar

from clusternet_nats.api.meta import KubeObject
from clusternet_nats.store import ObjectStore

K = TypeVar("K", bound=KubeObject)
R = TypeVar("R")

PARALLELISM = 64
"""Writes of one reconcile in flight at once (clusters of one Subscription, deletions)."""


class Outcome(StrEnum):
    CREATED = "Created"
    UPDATED = "Updated"
    UNCHANGED = "Unchanged"


def _owned(obj: KubeObject) -> dict[str, object]:
    return obj.model_dump(exclude={"metadata", "status"})


async def ensure(store: ObjectStore[K], current: K | None, desired: K) -> tuple[K, Outcome]:
    """Creates `desired`, or updates `current` to its spec, labels and annotations (others' kept);
    returns the stored object."""
    if current is None:
        return await store.create(desired), Outcome.CREATED
    labels = {**(current.metadata.labels or {}), **(desired.metadata.labels or {})}
    annotations = {**(current.metadata.annotations or {}), **(desired.metadata.annotations or {})}
    if (
        _owned(current) == _owned(desired)
        and labels == (current.metadata.labels or {})
        and annotations == (current.metadata.annotations or {})
        and (current.metadata.owner_references == desired.metadata.owner_references)
    ):
        return current, Outcome.UNCHANGED
    metadata = current.metadata.model_copy(
        update={
            "labels": labels,
            "annotations": annotations or None,
            "owner_references": desired.metadata.owner_references,
        }
    )
    # Shallow: the store copies what it writes, and `desired`'s spec may be shared by clusters.
    return await store.update(desired.model_copy(update={"metadata": metadata}), current), Outcome.UPDATED


async def remove(store: ObjectStore[K], obj: K) -> None:
    """Deletes `obj` as it was read (CAS on its revision); already gone is fine."""
    await store.delete(obj.metadata.namespace, obj.name, obj.metadata.resource_version)


async def remove_all(store: ObjectStore[K], objects: Iterable[K], limit: int = PARALLELISM) -> None:
    """Deletes each of `objects` as it was read, `limit` at once."""
    await concurrently(limit, [functools.partial(remove, store, obj) for obj in objects])


async def concurrently(limit: int, work: Iterable[Callable[[], Awaitable[R]]]) -> list[R]:
    """Runs each of `work` with at most `limit` at once; their results in order.

    So that the writes for many clusters are in flight together (one connection pipelines them)
    instead of one round trip after another. The first failure (a lost compare-and-set, say)
    cancels the rest and is raised as itself, so the work queue retries the whole reconcile as
    it would after a sequential one failed.
    """
    slots = asyncio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[R]]) -> R:
        async with slots:
            return await job()

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(job)) for job in work]
    except ExceptionGroup as failures:
        raise _first(failures) from None
    return [task.result() for task in tasks]


def _first(group: BaseExceptionGroup[Exception]) -> Exception:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first

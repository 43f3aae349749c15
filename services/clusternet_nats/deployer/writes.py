"""Converging one derived object (Base, Description) on its desired content with CAS writes.

The current object comes from an informer cache and carries the revision it was read at, so a
write based on a stale cache fails with ConflictError and the work queue retries on fresher
data. Labels the deployer does not own are kept, as Clusternet's update merges them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from enum import StrEnum
from typing import TypeVar

from clusternet_nats.api.meta import KubeObject
from clusternet_nats.store import ObjectStore, StoreError

K = TypeVar("K", bound=KubeObject)
R = TypeVar("R")

PARALLELISM = 64
"""Writes of one reconcile in flight at once (clusters of one Subscription, deletions)."""


class Outcome(StrEnum):
    CREATED = "Created"
    UPDATED = "Updated"
    UNCHANGED = "Unchanged"


def _owned_equal(current: KubeObject, desired: KubeObject) -> bool:
    """Whether the two agree on everything the deployer owns but metadata (field by field: no
    dump of either, since most reconciles of a large fleet find most objects unchanged)."""
    return all(
        getattr(current, name) == getattr(desired, name)
        for name in type(desired).model_fields
        if name not in ("metadata", "status")
    )


def changed(current: K | None, desired: K) -> K | None:
    """What to write to converge `current` on `desired` (its spec, labels and annotations, the
    others' labels and annotations kept): `desired` itself to create, an update of `current`,
    or None when nothing needs writing."""
    if current is None:
        return desired
    labels = {**(current.metadata.labels or {}), **(desired.metadata.labels or {})}
    annotations = {**(current.metadata.annotations or {}), **(desired.metadata.annotations or {})}
    if (
        _owned_equal(current, desired)
        and labels == (current.metadata.labels or {})
        and annotations == (current.metadata.annotations or {})
        and (current.metadata.owner_references == desired.metadata.owner_references)
    ):
        return None
    metadata = current.metadata.model_copy(
        update={
            "labels": labels,
            "annotations": annotations or None,
            "owner_references": desired.metadata.owner_references,
        }
    )
    # Shallow: the store copies what it writes, and `desired`'s spec may be shared by clusters.
    return desired.model_copy(update={"metadata": metadata})


async def ensure(store: ObjectStore[K], current: K | None, desired: K) -> tuple[K, Outcome]:
    """Creates `desired`, or updates `current` to it (`changed`); returns the stored object."""
    write = changed(current, desired)
    if write is None:
        assert current is not None
        return current, Outcome.UNCHANGED
    if current is None:
        return await store.create(write), Outcome.CREATED
    return await store.update(write, current), Outcome.UPDATED


async def ensure_all(store: ObjectStore[K], pairs: Sequence[tuple[K | None, K]]) -> list[tuple[K, Outcome]]:
    """`ensure` of each (current, desired), every write in flight together (pipelined: the
    fan-out of one change to a fleet is the bus's throughput, not a round trip per cluster).
    The first failure (a lost compare-and-set, say) is raised once all are written, so the work
    queue retries the reconcile on fresher data."""
    planned = [(current, changed(current, desired)) for current, desired in pairs]
    stored = iter(await store.write_all([(write, current) for current, write in planned if write is not None]))
    out: list[tuple[K, Outcome]] = []
    failure: StoreError | None = None
    for current, write in planned:
        if write is None:
            assert current is not None
            out.append((current, Outcome.UNCHANGED))
            continue
        result = next(stored)
        if isinstance(result, StoreError):
            failure = failure or result
        else:
            out.append((result, Outcome.CREATED if current is None else Outcome.UPDATED))
    if failure is not None:
        raise failure
    return out


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

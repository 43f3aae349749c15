"""The deployer's caches wired in a running service, for tests of what is built on them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from clusternet_nats.deployer.caches import Caches
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.waiting import eventually

T = TypeVar("T")


@contextlib.asynccontextmanager
async def on_caches(
    nats_url: str,
    name: str,
    make: Callable[[ServiceContext, Caches], T],
    enqueue: Callable[[str], None] = lambda _key: None,
) -> AsyncIterator[T]:
    """Runs service `name` whose Caches queue Subscriptions to converge through `enqueue` (and
    sweep or tell statuses to nobody); yields what `make` built on them."""
    built: list[T] = []

    async def build(ctx: ServiceContext) -> None:
        caches = Caches(ctx)
        caches.watch(enqueue, lambda: None, lambda _sub, _desc: None)
        built.append(make(ctx, caches))

    async with running_service(name, build, nats_url):
        await eventually(lambda: built, what=f"{name} is built")
        yield built[0]

"""Garbage collection tuned for services whose heap is mostly long-lived caches.

CPython's cyclic collector traverses every tracked object in a full collection, and starts one
whenever the objects that survived since the last grew by a quarter. A service caching a fleet
(tens of thousands of pydantic models, dicts and lists, none of them garbage) then spends its
CPU re-reading its caches: in a 5,000-cluster rollout, with the defaults, 7.5 s of the
deployer's CPU and some 13 s of each agent process's went to full collections, more than the
work itself. So:

* young collections run 70 times less often (`YOUNG_THRESHOLD` allocations, not 700); each is
  linear in what is still alive, and most objects a reconcile makes die by reference count long
  before, so the work per allocation shrinks, and far fewer objects are promoted to be read again;
* once the service is ready, what it built to get there (modules, schemas, the first listing of
  every informer, for an agent its clusters' state) is collected once and frozen out of every
  later collection (`gc.freeze`, as Instagram's servers do before forking);
* a process of simulated clusters starts them with the collector off (`building`), for at most
  `BUILDING_LIMIT` seconds: what is alive at a collection then is mostly the clusters' requests
  in flight, dead moments later, not garbage. Measured in a 10,000-cluster registration (four
  processes of 2,500): each process spent 3.6 s of its 19 CPU-s in young and middle collections
  that freed some 140,000 of the millions of objects they examined; with the collector off until
  its clusters had started, and one collection then, 1.9 s.

Reference counting frees every object without a cycle as before; cyclic garbage is still found,
only later.

What is freed is not returned to the system by itself: a converge over 10,000 clusters, a list of
10,000 objects or a megabytes-long status leaves glibc's heap holding the peak, pages free but
resident between live objects. Every `TRIM_INTERVAL` seconds a service process calls glibc's
`malloc_trim` (in a thread; some 20-50 ms for a 300 MiB heap), which hands free pages back:
measured after a 10,000-cluster rollout, 67 MiB over the four hub-side services. Where the C
library has no `malloc_trim` (not glibc) nothing is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
from collections.abc import Callable, Iterator

YOUNG_THRESHOLD = 50_000
"""Allocations (less deallocations) of tracked objects between two young collections."""
OLDER_THRESHOLDS = (20, 10)
"""Young collections per middle one, middle ones per full one (full ones wait for the quarter)."""
BUILDING_LIMIT = 300.0
"""Seconds the collector stays off while a process starts its clusters, at most (`building`): a
start the hub keeps waiting (retrying with backoff) must not grow its garbage for as long."""
TRIM_INTERVAL = 10.0
"""Seconds between two returns of freed heap pages to the system (`return_freed`)."""


_tuned = False


def tune() -> None:
    """At a service process's start, before the heap grows."""
    global _tuned
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
    _tuned = True


def settle() -> None:
    """The service is ready: what exists now is collected once, and what survives is frozen
    (never traversed again; freed by reference count as ever when it goes). Only in a process
    `tune` set up: a test process running services in-process keeps the defaults, its fixtures'
    cycles collected as ever."""
    if _tuned:
        gc.collect()
        gc.freeze()


@contextlib.contextmanager
def building(limit: float = BUILDING_LIMIT) -> Iterator[None]:
    """The process builds its state (call from the event loop): the collector is off until the
    block ends or `limit` seconds have passed, and what was built is then settled. Only in a
    process `tune` set up, with the collector on."""
    if not _tuned or not gc.isenabled():
        yield
        return
    gc.disable()
    resume = asyncio.get_running_loop().call_later(limit, gc.enable)
    try:
        yield
    finally:
        resume.cancel()
        gc.enable()
    settle()


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


async def return_freed(interval: float = TRIM_INTERVAL) -> None:
    """Runs for the service's life: hands the heap's free pages back every `interval` seconds.
    Only in a process `tune` set up (a test process keeps its heap as it is)."""
    trim = _malloc_trim()
    if not _tuned or trim is None:
        return
    while True:
        await asyncio.sleep(interval)
        await asyncio.to_thread(trim, 0)

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
  later collection (`gc.freeze`, as Instagram's servers do before forking).

Reference counting frees every object without a cycle as before; cyclic garbage is still found,
only later.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000
"""Allocations (less deallocations) of tracked objects between two young collections."""
OLDER_THRESHOLDS = (20, 10)
"""Young collections per middle one, middle ones per full one (full ones wait for the quarter)."""


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

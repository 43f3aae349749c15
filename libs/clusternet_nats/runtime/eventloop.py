"""The event loop every service process runs on: uvloop where it exists (Linux, macOS).

Why: a service's CPU is mostly event-loop work, not its own logic. A 10,000-cluster rollout
spent about 70 % of the agents' CPU in the NATS client and the loop (docs/scale.md), and every
write is a JetStream round trip. 200 connections making 50 sequential `js.publish` round trips
each took 1.45 and 1.56 CPU-s on asyncio's loop, 0.98 and 1.12 on uvloop, in the same runs
(about 30 % less). uvloop is libuv under asyncio's own API, so the code is the same on both;
tests run in-process services on pytest's asyncio loop and subprocesses on this one, so both
are exercised. `CNET_EVENT_LOOP=asyncio` picks the standard loop (to tell the two apart when a
behaviour differs).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

ENV = "CNET_EVENT_LOOP"


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on uvloop, unless unavailable or `CNET_EVENT_LOOP=asyncio`."""
    choice = os.environ.get(ENV, "uvloop")
    if choice not in ("uvloop", "asyncio"):
        main.close()
        raise SystemExit(f"{ENV}={choice!r}: expected 'uvloop' or 'asyncio'")
    if choice == "uvloop" and sys.platform != "win32":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)

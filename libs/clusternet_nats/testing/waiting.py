"""Waiting on a condition with a deadline: the only synchronisation tests use.

`eventually` waits for something to happen; `holds` asserts that something stays true for a
bounded time, the only way to show that a thing did not happen (use it after a positive control
that proves the channel works).
"""

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


@overload
async def eventually(
    check: Callable[[], Awaitable[T]], timeout: float = ..., interval: float = ..., what: str = ...
) -> T: ...
@overload
async def eventually(check: Callable[[], T], timeout: float = ..., interval: float = ..., what: str = ...) -> T: ...
async def eventually(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05, what: str = "") -> Any:
    """Polls `check` until it returns a truthy value (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return result
            last = result
        except AssertionError as err:
            last = err
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout}s: {what or check!r}; last: {last!r}")
        await asyncio.sleep(interval)


async def holds(check: Callable[[], Any], seconds: float, what: str, interval: float = 0.1) -> None:
    """Asserts `check` stays truthy for `seconds` (a bounded negative wait)."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        assert result, what
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(interval)

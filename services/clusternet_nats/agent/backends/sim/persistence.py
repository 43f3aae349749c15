"""The sim cluster's objects on disk, so an agent restart finds its child as it left it.

Writes are debounced (a burst of applies costs one write) and run in a thread (the event loop
never blocks on the disk); the file is replaced atomically, so a crash mid-write leaves the
previous state readable. `close()` writes whatever is pending before the process exits. The
state is serialized on the event loop, between two changes, so the thread gets bytes and no
copy of the objects is made (one agent process hosting thousands of clusters spent more on
deep-copying their objects for these writes than on applying them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

DEBOUNCE_SECONDS = 0.2

log = structlog.get_logger(__name__)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return data


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class StateFile:
    def __init__(self, path: Path, snapshot: Callable[[], dict[str, Any]]) -> None:
        self.path = path
        self._snapshot = snapshot
        self._dirty = False
        self._closing = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._log = log.bind(path=str(path))

    async def load(self) -> dict[str, Any] | None:
        return await asyncio.to_thread(_read, self.path)

    def changed(self) -> None:
        """Schedules a write of the state as it will be a moment from now."""
        self._dirty = True
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_while_dirty())

    async def close(self) -> None:
        """Writes what is pending now, without waiting out the debounce."""
        self._closing.set()
        if self._writer is not None:
            await self._writer

    async def _write_while_dirty(self) -> None:
        while self._dirty:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), DEBOUNCE_SECONDS)
            self._dirty = False
            try:
                data = json.dumps(self._snapshot(), separators=(",", ":")).encode()
                await asyncio.to_thread(_write, self.path, data)
            except OSError as err:
                self._log.error("sim.state_not_saved", error=repr(err))

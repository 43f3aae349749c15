"""The sim clusters' objects on disk, so an agent restart finds each child as it left it.

A row per cluster in its state directory's `sim-state.sqlite3` (agent/statedb.py says why one
database and not a file per cluster). Writes are debounced and batched across every cluster of
the directory (a burst of applies to a thousand clusters costs one transaction). The state is
serialized on the event loop, between two changes, so the writer thread gets text and no copy
of the objects is made. `close()` writes whatever of its cluster is pending before the process
exits.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from clusternet_nats.agent.statedb import Snapshot, StateDatabase, closed, opened, saved_rows

DATABASE = "sim-state.sqlite3"


class StateFile:
    """One cluster's state, a row of its directory's database."""

    def __init__(self, directory: Path, name: str, snapshot: Snapshot) -> None:
        self.name = name
        self._directory = _resolved(directory)
        self._snapshot = snapshot
        self._database: StateDatabase | None = None

    @property
    def path(self) -> Path:
        """The database file this cluster's state is kept in."""
        return self._directory / DATABASE

    def _open(self) -> StateDatabase:
        if self._database is None:
            self._database = opened(self.path)
        return self._database

    async def load(self) -> dict[str, Any] | None:
        return await self._open().load(self.name)

    def changed(self) -> None:
        """Schedules a write of the state as it will be a moment from now."""
        self._open().changed(self.name, self._snapshot)

    async def close(self) -> None:
        """Writes what is pending now, without waiting out the debounce."""
        database, self._database = self._database, None
        if database is None:
            return
        await database.flush(self.name)
        await closed(database)


@functools.lru_cache(maxsize=64)
def _resolved(directory: Path) -> Path:
    """The directory every cluster of a process shares, resolved once (a resolve is a system
    call per component of the path, and a process starts thousands of clusters)."""
    return directory.resolve()


def saved_states(directory: Path) -> dict[str, dict[str, Any]]:
    """Every cluster's state as last written in `directory`, by cluster name (what tests and
    tools outside the agent read to see inside its children; empty when nothing was written)."""
    return saved_rows(directory / DATABASE)

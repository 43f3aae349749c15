"""The sim clusters' objects on disk, so an agent restart finds each child as it left it.

One SQLite database per state directory (`sim-state.sqlite3`, a row per cluster) rather than a
file per cluster: an agent process hosts thousands of clusters, and replacing thousands of small
files atomically cost the kernel more CPU than the clusters' applies. Writes are debounced and
batched across every cluster of the directory (a burst of applies to a thousand clusters costs
one transaction), and run in a thread (the event loop never blocks on the disk); a transaction
is atomic, so a crash mid-write leaves the previous state readable. WAL journalling makes a
commit an append (synchronous=NORMAL: durable across a process crash, which is what an agent
restart needs). `close()` writes whatever of its cluster is pending before the process exits.
The state is serialized on the event loop, between two changes, so the thread gets text and no
copy of the objects is made. Agent processes sharing a directory share the database (SQLite
locks it; they write different rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import structlog

DEBOUNCE_SECONDS = 0.2
DATABASE = "sim-state.sqlite3"
SERIALIZE_CHUNK = 100
"""Clusters serialized between two turns of the event loop (each one whole, between two changes)."""
BUSY_TIMEOUT_SECONDS = 30.0
"""How long a write waits for another agent process's transaction on the same database."""
LOCKED_RETRY_SECONDS = 0.05

log = structlog.get_logger(__name__)

Snapshot = Callable[[], dict[str, Any]]
T = TypeVar("T")


class _Database:
    """The database of one state directory, its writer shared by every cluster stored there."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / DATABASE
        self._directory = directory
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        """Held by the thread using the connection (loads and writes run in threads)."""
        self._dirty: dict[str, Snapshot] = {}
        self._writing: set[str] = set()
        """The clusters of the batch being written now."""
        self._hurry = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self.users = 0
        self._log = log.bind(path=str(self.path))

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute("CREATE TABLE IF NOT EXISTS clusters (name TEXT PRIMARY KEY, state TEXT NOT NULL)")
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    def _retrying(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` on the connection (in a thread), tried again while SQLite says the database is
        locked, up to the busy timeout: agent processes sharing the directory open it at the same
        moment, and SQLite answers some of what meets another's set-up (the journal's recovery)
        with "database is locked" at once, not after its busy timeout. An agent failed to start so."""
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        while True:
            try:
                with self._lock:
                    return work(self._connect())
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
            time.sleep(LOCKED_RETRY_SECONDS)

    def _read(self, name: str) -> dict[str, Any] | None:
        query = "SELECT state FROM clusters WHERE name = ?"
        row = self._retrying(lambda connection: connection.execute(query, (name,)).fetchone())
        if row is None:
            return None
        state: dict[str, Any] = json.loads(row[0])
        return state

    def _write(self, rows: list[tuple[str, str]]) -> None:
        def write(connection: sqlite3.Connection) -> None:
            with connection:  # one transaction: every row or none
                connection.execute("BEGIN")
                connection.executemany("INSERT OR REPLACE INTO clusters (name, state) VALUES (?, ?)", rows)

        self._retrying(write)

    def _close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    async def load(self, name: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._read, name)

    def changed(self, name: str, snapshot: Snapshot) -> None:
        self._dirty[name] = snapshot
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_while_dirty())

    async def flush(self, name: str) -> None:
        """Returns once what `name` had pending is written (without waiting out the debounce)."""
        while (name in self._dirty or name in self._writing) and self._writer is not None:
            self._hurry.set()
            await asyncio.shield(self._writer)

    async def release(self) -> None:
        """One user fewer; the last closes the connection, after the writes in flight."""
        self.users -= 1
        if self.users == 0:
            if self._writer is not None:
                self._hurry.set()
                await asyncio.shield(self._writer)
            await asyncio.to_thread(self._close)

    async def _write_while_dirty(self) -> None:
        while self._dirty:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DEBOUNCE_SECONDS):
                    await self._hurry.wait()
            batch, self._dirty = self._dirty, {}
            self._writing = set(batch)
            rows = []
            for name, snapshot in batch.items():
                rows.append((name, json.dumps(snapshot(), separators=(",", ":"))))
                if len(rows) % SERIALIZE_CHUNK == 0:
                    await asyncio.sleep(0)  # a thousand clusters' states: let the loop breathe between chunks
            try:
                await asyncio.to_thread(self._write, rows)
            except (OSError, sqlite3.Error) as err:
                self._log.error("sim.state_not_saved", clusters=len(rows), error=repr(err))
            finally:
                self._writing = set()
        self._hurry.clear()


_databases: dict[tuple[Path, asyncio.AbstractEventLoop], _Database] = {}
"""The open databases, one per directory (and event loop, which their writers run on)."""


class StateFile:
    """One cluster's state, a row of its directory's database."""

    def __init__(self, directory: Path, name: str, snapshot: Snapshot) -> None:
        self.name = name
        self._directory = directory.resolve()
        self._snapshot = snapshot
        self._database: _Database | None = None

    @property
    def path(self) -> Path:
        """The database file this cluster's state is kept in."""
        return self._directory / DATABASE

    def _open(self) -> _Database:
        if self._database is None:
            key = (self._directory, asyncio.get_running_loop())
            database = _databases.get(key)
            if database is None:
                database = _databases[key] = _Database(self._directory)
            database.users += 1
            self._database = database
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
        await database.release()
        if database.users == 0:
            _databases.pop((self._directory, asyncio.get_running_loop()), None)


def saved_states(directory: Path) -> dict[str, dict[str, Any]]:
    """Every cluster's state as last written in `directory`, by cluster name (what tests and
    tools outside the agent read to see inside its children; empty when nothing was written)."""
    path = directory / DATABASE
    if not path.exists():
        return {}
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS)) as db:
        return {name: json.loads(state) for name, state in db.execute("SELECT name, state FROM clusters")}

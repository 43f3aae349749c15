"""What an agent keeps in its state directory: one SQLite database per kind of state, a row per
cluster, rather than a file per cluster.

An agent process may host thousands of simulated clusters, and a file created on the disks we
run on costs the kernel about 0.4 ms of CPU (an ext4 inode; a directory the same): a file or two
per cluster was more CPU than the clusters' own work, in the sim's applies and in a fleet's
registration alike. Rows are written in batches across every cluster of the directory (one
transaction for what is pending), and read likewise (one query for the rows asked for at once, so
a process starting its clusters makes one thread hop, not one per cluster), in a thread (the
event loop never blocks on the disk); a
transaction is atomic, so a crash mid-write leaves the previous rows readable. WAL journalling
makes a commit an append (synchronous=NORMAL: durable across a process crash, which is what an
agent restart needs). The file is made owner-only before SQLite opens it (SQLite gives its WAL
the database's mode): a row may hold a secret. Agent processes sharing a directory share the
database (SQLite locks it; they write different rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import structlog

DEBOUNCE_SECONDS = 0.2
SERIALIZE_CHUNK = 100
"""Rows serialized between two turns of the event loop (each one whole, between two changes)."""
BUSY_TIMEOUT_SECONDS = 30.0
"""How long a write waits for another agent process's transaction on the same database."""
LOCKED_RETRY_SECONDS = 0.05
READ_CHUNK = 500
"""Rows asked for in one query (SQLite caps the parameters of a statement)."""

log = structlog.get_logger(__name__)

Snapshot = Callable[[], dict[str, Any]]
T = TypeVar("T")


class StateNotSaved(Exception):
    """A row could not be written (the write's error is the cause); it was logged too."""


class StateDatabase:
    """One database of a state directory, its writer shared by every cluster stored there."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        """Held by the thread using the connection (loads and writes run in threads)."""
        self._dirty: dict[str, Snapshot] = {}
        self._writing: set[str] = set()
        """The rows of the batch being written now."""
        self._failed: dict[str, BaseException] = {}
        """Rows whose last write failed, with its error."""
        self._hurry = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._wanted: dict[str, asyncio.Future[str | None]] = {}
        """Rows asked for and not yet read, with what each asker awaits (the row's text)."""
        self._reader: asyncio.Task[None] | None = None
        self.users = 0
        self._log = log.bind(path=str(self.path))

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))  # owner-only before SQLite sees it
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

    def _read(self, names: list[str]) -> dict[str, str]:
        rows: dict[str, str] = {}
        for start in range(0, len(names), READ_CHUNK):
            rows.update(self._retrying(functools.partial(_select, names[start : start + READ_CHUNK])))
        return rows

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
        """The row as written last (read now, not remembered: processes may share the file).
        Rows asked for in the same moment are read in one query, in one turn of a thread: a
        process starting its thousands of clusters asks for all their rows at once."""
        future = self._wanted.get(name)
        if future is None:
            future = self._wanted[name] = asyncio.get_running_loop().create_future()
            future.add_done_callback(_retrieved)
            if self._reader is None or self._reader.done():
                self._reader = asyncio.create_task(self._read_wanted())
                self._reader.add_done_callback(self._reader_stopped)
        text = await asyncio.shield(future)
        if text is None:
            return None
        state: dict[str, Any] = json.loads(text)
        return state

    async def _read_wanted(self) -> None:
        await asyncio.sleep(0)  # the loads asked in this turn of the loop join the first batch
        while self._wanted:
            batch, self._wanted = self._wanted, {}
            try:
                rows = await asyncio.to_thread(self._read, list(batch))
            except asyncio.CancelledError:
                self._wanted.update(batch)  # `_reader_stopped` cancels them with the rest
                raise
            except Exception as err:
                for future in batch.values():
                    future.set_exception(err)
                continue
            for name, future in batch.items():
                future.set_result(rows.get(name))

    def _reader_stopped(self, reader: asyncio.Task[None]) -> None:
        """A reader cancelled (at shutdown; before it ran, too) leaves no asker waiting for it."""
        if reader is self._reader and reader.cancelled():
            wanted, self._wanted = self._wanted, {}
            for future in wanted.values():
                future.cancel()

    def changed(self, name: str, snapshot: Snapshot) -> None:
        """Schedules a write of `name`'s row as `snapshot` will give it a moment from now."""
        self._dirty[name] = snapshot
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_while_dirty())

    async def put(self, name: str, row: dict[str, Any]) -> None:
        """Writes `row` now, in one transaction with whatever else is pending (a fleet's rows
        written at the same moment commit together); raises StateNotSaved if it was not."""
        self.changed(name, lambda: row)
        await self.flush(name)
        failed = self._failed.get(name)
        if failed is not None:
            raise StateNotSaved(f"{self.path}: {name}") from failed

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
                    await asyncio.sleep(0)  # a thousand clusters' rows: let the loop breathe between chunks
            try:
                await asyncio.to_thread(self._write, rows)
            except (OSError, sqlite3.Error) as err:
                self._log.error("agent.state_not_saved", clusters=len(rows), error=repr(err))
                self._failed.update(dict.fromkeys(batch, err))
            else:
                for name in batch:
                    self._failed.pop(name, None)
            finally:
                self._writing = set()
        self._hurry.clear()


def _select(names: list[str], connection: sqlite3.Connection) -> list[tuple[str, str]]:
    query = f"SELECT name, state FROM clusters WHERE name IN ({','.join('?' * len(names))})"
    return connection.execute(query, names).fetchall()


def _retrieved(future: asyncio.Future[str | None]) -> None:
    """Marks a load's error seen: an asker cancelled meanwhile no longer awaits it."""
    if not future.cancelled():
        future.exception()


_databases: dict[tuple[Path, asyncio.AbstractEventLoop], StateDatabase] = {}
"""The open databases, one per file (and event loop, which their writers run on)."""


def opened(path: Path) -> StateDatabase:
    """The database at `path`, shared by every user on this event loop, with one user more;
    `closed` undoes it."""
    key = (path, asyncio.get_running_loop())
    database = _databases.get(key)
    if database is None:
        database = _databases[key] = StateDatabase(path)
    database.users += 1
    return database


async def closed(database: StateDatabase) -> None:
    """One user fewer; the last closes it, after the writes in flight."""
    await database.release()
    if database.users == 0:
        _databases.pop((database.path, asyncio.get_running_loop()), None)


def saved_rows(path: Path) -> dict[str, dict[str, Any]]:
    """Every row as last written in the database at `path`, by cluster name (what tests and
    tools outside the agent read; empty when nothing was written)."""
    if not path.exists():
        return {}
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS)) as db:
        return {name: json.loads(state) for name, state in db.execute("SELECT name, state FROM clusters")}

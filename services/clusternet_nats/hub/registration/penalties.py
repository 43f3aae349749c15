"""Clusters banned for a while for flooding, consulted by the callout on each connection.

NATS has no rate limit per user: a cluster with a valid credential may send as many requests as
its link carries, and the hub's intake is shared by every cluster. The intake answers a cluster
past its rate with 429; one that goes on regardless is banned: its connections are kicked and
the callout refuses it until the ban ends. A repeat doubles the ban, up to `longest`. The state
is each hub replica's own: the intake's queue group spreads a flood over the replicas, so each
bans the flooder from what it sees.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import structlog

DEFAULT_BAN, LONGEST_BAN = 60.0, 3600.0
log = structlog.get_logger(__name__)


@dataclass
class _Ban:
    until: float
    length: float


class Penalties:
    def __init__(self, first: float = DEFAULT_BAN, longest: float = LONGEST_BAN, max_entries: int = 100_000) -> None:
        self.first, self.longest, self.max_entries = first, longest, max_entries
        self._bans: dict[str, _Ban] = {}
        self.kick: Callable[[str], Coroutine[Any, Any, int]] | None = None
        """Drops a cluster's connections (the revoker's, when the hub has a system connection)."""
        self._kicks: set[asyncio.Task[int]] = set()

    def punish(self, cluster_id: str, why: str) -> None:
        """Bans the cluster and drops its connections (once per ban)."""
        if self.ban(cluster_id, why) and self.kick is not None:
            task = asyncio.create_task(self.kick(cluster_id))
            self._kicks.add(task)
            task.add_done_callback(self._kicks.discard)

    def ban(self, cluster_id: str, why: str, now: float | None = None) -> bool:
        """Bans `cluster_id` (longer if it was banned before); False if it already is."""
        now = time.monotonic() if now is None else now
        previous = self._bans.get(cluster_id)
        if previous is not None and previous.until > now:
            return False
        length = min(self.longest, previous.length * 2) if previous else self.first
        if len(self._bans) >= self.max_entries:
            self._forget_expired(now)
        self._bans[cluster_id] = _Ban(now + length, length)
        log.warning("cluster.banned", cluster_id=cluster_id, seconds=length, reason=why)
        return True

    def refusal(self, cluster_id: str, now: float | None = None) -> str | None:
        """Why this cluster may not connect now, or None."""
        ban = self._bans.get(cluster_id)
        now = time.monotonic() if now is None else now
        if ban is None or ban.until <= now:
            return None
        return f"cluster {cluster_id} is banned for {ban.until - now:.0f}s more for flooding the hub"

    def _forget_expired(self, now: float) -> None:
        # A ban that ended long ago no longer doubles the next one.
        self._bans = {k: b for k, b in self._bans.items() if b.until + b.length > now}

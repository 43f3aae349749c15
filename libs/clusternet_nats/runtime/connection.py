"""Connecting to NATS so that a service outlives restarts of the server.

The first connection is retried until the server is there (services may start before NATS);
after that nats-py reconnects forever with a short wait, and every registered informer is told
to re-create its consumer as soon as the link is back instead of waiting for its next poll.

A NATS cluster is given as comma-separated URLs (or one Service name in front of it); nats-py
then also learns the other servers from the one it reached. URLs carry the service's user and
password, which nats-py would not send to a server it discovered, so the credentials every URL
shares are handed over as options too: a reconnect to any server of the cluster authenticates.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable, Sequence
from urllib.parse import unquote, urlsplit

import nats
import structlog
from clusternet_nats.store.backoff import Backoff
from nats.aio.client import Client as NATS
from nats.errors import AuthorizationError

log = structlog.get_logger(__name__)

ERRORS_KEPT = 64
"""Errors a connection remembers, the latest: a link that stays down reports one per reconnect
attempt, four a second (`reconnect_time_wait`), for as long as it is down."""
RECONNECT_WAIT = 0.25
"""Between two reconnects to a server that cannot be reached (nats-py's `reconnect_time_wait`)."""
REFUSED_BASE, REFUSED_CAP = 0.5, 60.0
"""Backoff between reconnects the server refuses (a cluster deleted or banned, a hub whose callout
is not up yet): the first window and the largest, with full jitter. At nats-py's pace a deleted
cluster's agent left running was refused four times a second for good, and the hub's callout,
counting every refusal against its source, refused the whole address after 30 in 10 s: every
other cluster behind it (a site's NAT) that had not connected within the hour, a new one too."""


class CredentialsRefused(ConnectionError):
    """The server refused the connection's user and password (its own users, or the hub's auth
    callout): an answer, not an unreachable server."""


def _refusal(err: BaseException) -> bool:
    return isinstance(err, AuthorizationError) or "authorization violation" in str(err).lower()


def _redacted(url: str) -> str:
    """URLs without their `user:password@` parts, for logs."""
    return ",".join(re.sub(r"//[^/@]*@", "//", u) for u in url.split(","))


def shared_credentials(urls: Sequence[str]) -> dict[str, str]:
    """`user`/`password` options when every URL names the same user and password, else none."""
    found = set()
    for url in urls:
        parts = urlsplit(url)
        if parts.username is None or parts.password is None:
            return {}
        found.add((unquote(parts.username), unquote(parts.password)))
    if len(found) != 1:
        return {}
    user, password = found.pop()
    return {"user": user, "password": password}


async def barrier(nc: NATS, timeout: int = 10) -> None:
    """Returns once the server has processed everything sent on `nc` so far, so a subscription
    made just before is there for any other client's next publish.

    nats-py's `flush()` alone does not promise that: it writes its PING straight to the socket,
    while a SUB or PUB waits in the client's pending buffer for the flusher task, so the PONG can
    come back before the SUB reached the server (a responder answering "no responders" to the
    first request after it started, seen once in CI). The first flush lets the flusher
    write what is pending (it runs before the PONG can be read); the second PING follows it."""
    await nc.flush(timeout)
    await nc.flush(timeout)


class Connection:
    def __init__(
        self, url: str, name: str, creds: str | None = None, inbox_prefix: str | None = None, retry_cap: float = 2.0
    ) -> None:
        self.url, self.name, self.creds = url, name, creds
        self.retry_cap = retry_cap
        """The longest wait between first-connection attempts (each drawn with full jitter, backoff.py)."""
        # A cluster's credentials let it read replies under its own prefix only, never `_INBOX.>`.
        self.inbox_prefix = inbox_prefix
        self.nc: NATS | None = None
        self._on_reconnect: list[Callable[[], None]] = []
        self.errors: deque[BaseException] = deque(maxlen=ERRORS_KEPT)
        """The latest errors nats-py reported (tests read them)."""
        self._refused = False
        """The server refused the credentials since the current connection attempt began."""
        self._refused_reconnects = Backoff(REFUSED_BASE, REFUSED_CAP)

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        self._on_reconnect.append(callback)

    async def connect(self, timeout: float | None = 60.0, retry_refused: bool = True) -> NATS:
        """Connects, retrying with backoff for `timeout` seconds (None: until it does). Without
        `retry_refused`, refused credentials end it at once (CredentialsRefused): a caller holding
        other credentials to try, since every refusal counts against the source it comes from
        (the hub's callout throttles a source that failed too often, hub/registration/callout.py)."""
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        backoff = Backoff(0.1, self.retry_cap)
        while True:
            self._refused = False
            try:
                servers = [u.strip() for u in self.url.split(",")]
                self.nc = await nats.connect(
                    servers=servers,
                    name=self.name,
                    user_credentials=self.creds,
                    **({} if self.creds else shared_credentials(servers)),
                    **({"inbox_prefix": self.inbox_prefix} if self.inbox_prefix else {}),
                    # nats-py retries a first connection forever, every 0.25 s whatever the
                    # answer: a refused fleet would come back in lockstep. One more try of each
                    # server (none where a refusal ends it), then the backoff below (full
                    # jitter); once connected, forever.
                    allow_reconnect=retry_refused,
                    max_reconnect_attempts=1,
                    reconnect_time_wait=RECONNECT_WAIT,
                    connect_timeout=2,
                    # A restarted server closes the socket, which is noticed at once; pings only
                    # catch half-open links, and each costs the server: one per 20 s per client.
                    ping_interval=20,
                    max_outstanding_pings=3,
                    error_cb=self._error,
                    disconnected_cb=self._disconnected,
                    reconnected_cb=self._reconnected,
                )
                self.nc.options["allow_reconnect"] = True
                self.nc.options["max_reconnect_attempts"] = -1
                # host:port only: a URL may carry a user and password.
                where = self.nc.connected_url
                log.info("nats.connected", url=f"{where.hostname}:{where.port}" if where else "?")
                return self.nc
            except Exception as err:
                if self._refused and not retry_refused:
                    raise CredentialsRefused(f"{self.name}: the server refused its credentials") from err
                if deadline is not None and asyncio.get_running_loop().time() > deadline:
                    raise
                log.info("nats.connect_retry", url=_redacted(self.url), error=repr(err))
                await backoff.wait(deadline)

    async def close(self, drain: bool = True) -> None:
        """Drains (what was received is handled, what was sent flushed), or, for a connection
        whose last request was answered, just closes: no unsubscribes, no round trip.

        Never raises, and leaves nothing running. nats-py's close flushes what was buffered
        while reconnecting; over a link cut under it that flush raises (ConnectionResetError),
        and its close stops there: the client stayed half closed, its reconnect loop and its
        subscriptions' tasks running for good (seen: an in-process agent stopped while cut off,
        dialling a dead server through every later test)."""
        nc = self.nc
        if nc is None or nc.is_closed:
            return
        if drain:
            try:
                async with asyncio.timeout(5):
                    await nc.drain()
                return
            except Exception:
                pass  # closed below
        try:
            await nc.close()
        except Exception as err:
            log.info("nats.close_failed", error=repr(err))
        _end_leftovers(nc)

    async def _error(self, err: Exception) -> None:
        self.errors.append(err)
        refused = _refusal(err)
        self._refused = self._refused or refused
        log.warning("nats.error", error=repr(err))
        if refused and self.nc is not None and not self.nc.is_closed:
            # A reconnect refused (`nc` is set once the first connect succeeded). nats-py reads
            # its wait before each attempt: paced like every other retry instead.
            self.nc.options["reconnect_time_wait"] = self._refused_reconnects.next_delay()

    async def _disconnected(self) -> None:
        log.info("nats.disconnected")

    async def _reconnected(self) -> None:
        log.info("nats.reconnected")
        if self.nc is not None:
            self.nc.options["reconnect_time_wait"] = RECONNECT_WAIT
        self._refused_reconnects.reset()
        for callback in self._on_reconnect:
            callback()


def _end_leftovers(nc: NATS) -> None:
    """Cancels what a close that stopped early leaves behind (nats-py has no public way)."""
    tasks = [getattr(nc, "_reconnection_task", None)]
    tasks += [getattr(sub, "_wait_for_msgs_task", None) for sub in getattr(nc, "_subs", {}).values()]
    for task in tasks:
        if task is not None and not task.done():
            task.cancel()
    transport = getattr(nc, "_transport", None)
    if transport is not None:
        transport.close()

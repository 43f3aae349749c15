"""Finds a cluster flooding the JetStream API and bans it (penalties.py).

A cluster's grant sends only its own consumer's life cycle to the API (permissions.py): a few
requests when its agent starts or reconnects. Each request the server handles is announced on
`$JS.EVENT.ADVISORY.API` with the requesting client's user, which for a cluster is its id, so
counting them costs nothing until someone floods: measured, 19,000 requests/s from one cluster
kept another's consumer create waiting up to 5 s, or failing. Past `burst` requests at more than
`rate` a second the cluster is kicked and refused for a while. Every hub replica subscribes
(not a queue group), so each keeps the same bans.
"""

from __future__ import annotations

import json
import re

import structlog
from clusternet_nats.api.meta import CLUSTER_ID
from clusternet_nats.hub.registration.penalties import Penalties
from clusternet_nats.runtime.ratelimit import RateLimiter
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

API_ADVISORIES = "$JS.EVENT.ADVISORY.API"
DEFAULT_RATE, DEFAULT_BURST = 2.0, 60.0
log = structlog.get_logger(__name__)


class ApiFloodGuard:
    def __init__(
        self, nc: NATS, penalties: Penalties, rate: float = DEFAULT_RATE, burst: float = DEFAULT_BURST
    ) -> None:
        self.nc, self.penalties = nc, penalties
        self.limiter = RateLimiter(rate, burst)

    async def start(self) -> None:
        # A flood is what this listens to: drop advisories rather than grow without bound.
        await self.nc.subscribe(API_ADVISORIES, cb=self._seen, pending_msgs_limit=10_000)

    async def _seen(self, msg: Msg) -> None:
        try:
            user = str((json.loads(msg.data).get("client") or {}).get("user") or "")
        except (ValueError, AttributeError):
            return
        if not re.fullmatch(CLUSTER_ID, user) or self.limiter.allow(user):
            return
        self.penalties.punish(user, "JetStream API flood")

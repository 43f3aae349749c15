"""Token buckets per identity: one cluster's flood costs it its own budget, never another's.

Used by the hub's intake: requests per cluster, and the refusals a cluster may ignore before it
is banned.

Memory is bounded: at most `max_clusters` buckets are kept, the least recently used dropped
first (a dropped bucket comes back full, which only forgives an idle cluster).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    def __init__(self, rate: float, burst: float, max_clusters: int = 100_000) -> None:
        self.rate, self.burst, self.max_clusters = rate, burst, max_clusters
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def allow(self, who: str, now: float | None = None) -> bool:
        """Takes one token from `who`'s bucket; False when it is empty."""
        now = time.monotonic() if now is None else now
        bucket = self._buckets.pop(who, None) or _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
        bucket.stamp = now
        self._buckets[who] = bucket
        if len(self._buckets) > self.max_clusters:
            self._buckets.popitem(last=False)
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

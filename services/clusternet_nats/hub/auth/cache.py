"""A small time-bounded cache for review answers, as kube's webhook authenticators keep one.

Bounded in size (oldest entries go first) so a flood of distinct bad tokens cannot grow memory.
"""

from __future__ import annotations

import time
from typing import Generic, TypeVar

DEFAULT_TTL = 10.0
"""Seconds a review answer is kept: kube's default for TokenReview and SubjectAccessReview caches."""
K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    def __init__(self, max_entries: int = 4096) -> None:
        self.max_entries = max_entries
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> tuple[bool, V | None]:
        """(found, value); expired entries are not found."""
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        expires, value = entry
        if time.monotonic() >= expires:
            del self._entries[key]
            return False, None
        return True, value

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries.pop(key, None)
        while len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (time.monotonic() + ttl, value)

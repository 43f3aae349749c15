"""A reverse index over an informer's cache: which keys carry a given value (a feed, a uid...).

Informer handlers see only the new value of a key, and None when it is deleted; the index keeps
what each key carried before, so a deletion still tells which Subscriptions it affected, as
client-go's indexers do. Shared by the services that map changes to the objects they concern
(the deployer's feed, cluster and owner indexes; the scheduler's feed index).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V", bound=Hashable)


class Index(Generic[T, V]):
    def __init__(self, values_of: Callable[[T], Iterable[V]]) -> None:
        self._values_of = values_of
        self._by_key: dict[str, frozenset[V]] = {}
        self._by_value: dict[V, set[str]] = {}

    def update(self, key: str, obj: T | None) -> set[V]:
        """Re-indexes `key` (None: deleted); returns the values it carried before or carries now."""
        old = self._by_key.pop(key, frozenset())
        new = frozenset(self._values_of(obj)) if obj is not None else frozenset()
        for value in old - new:
            keys = self._by_value[value]
            keys.discard(key)
            if not keys:
                del self._by_value[value]
        for value in new - old:
            self._by_value.setdefault(value, set()).add(key)
        if new:
            self._by_key[key] = new
        return set(old | new)

    def keys_for(self, value: V) -> list[str]:
        return sorted(self._by_value.get(value, ()))

    def values_of(self, key: str) -> frozenset[V]:
        return self._by_key.get(key, frozenset())

    def has(self, value: V) -> bool:
        return value in self._by_value

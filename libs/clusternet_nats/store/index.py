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
    """Kept compact, since most indexes hold a line per cluster: a key's values as a tuple (not a
    frozenset, 4 times the size), and a value carried by one key as that key itself (a set only
    once a second key carries it)."""

    def __init__(self, values_of: Callable[[T], Iterable[V]]) -> None:
        self._values_of = values_of
        self._by_key: dict[str, tuple[V, ...]] = {}
        self._by_value: dict[V, str | set[str]] = {}

    def update(self, key: str, obj: T | None) -> set[V]:
        """Re-indexes `key` (None: deleted); returns the values it carried before or carries now."""
        old = set(self._by_key.pop(key, ()))
        new = tuple(dict.fromkeys(self._values_of(obj))) if obj is not None else ()
        for value in old.difference(new):
            self._remove(value, key)
        for value in set(new) - old:
            self._add(value, key)
        if new:
            self._by_key[key] = new
        return old.union(new)

    def _add(self, value: V, key: str) -> None:
        found = self._by_value.get(value)
        if found is None:
            self._by_value[value] = key
        elif isinstance(found, str):
            if found != key:
                self._by_value[value] = {found, key}
        else:
            found.add(key)

    def _remove(self, value: V, key: str) -> None:
        found = self._by_value.get(value)
        if isinstance(found, str):
            if found == key:
                del self._by_value[value]
        elif found is not None:
            found.discard(key)
            if len(found) == 1:
                self._by_value[value] = next(iter(found))
            elif not found:
                del self._by_value[value]

    def keys_for(self, value: V) -> list[str]:
        found = self._by_value.get(value)
        if found is None:
            return []
        return [found] if isinstance(found, str) else sorted(found)

    def values_of(self, key: str) -> frozenset[V]:
        return frozenset(self._by_key.get(key, ()))

    def has(self, value: V) -> bool:
        return value in self._by_value

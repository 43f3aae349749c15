"""The kinds this system serves, with every name a user or the store may call them by.

One table answers what kubectl's discovery answers for Clusternet's CRDs (plural, singular,
short names, scope) plus where each kind lives in the store (a KV bucket per kind and a separate
status bucket, so spec writers and status writers never contend for the same key).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from clusternet_nats.api.apps import APPS_KINDS
from clusternet_nats.api.clusters import CLUSTERS_KINDS
from clusternet_nats.api.meta import KubeObject

CATEGORIES = ("clusternet",)


class UnknownKindError(KeyError):
    """A name that is none of the served kinds' kind, plural, singular or short names."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        valid = ", ".join(sorted({n for info in all_kinds() for n in info.names()}))
        return f"unknown kind {self.name!r}; valid names are: {valid}"


@dataclass(frozen=True)
class KindInfo:
    model: type[KubeObject]
    kind: str
    group: str
    version: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    namespaced: bool
    bucket: str
    status_bucket: str | None
    categories: tuple[str, ...] = CATEGORIES
    """What `kubectl get <category>` includes this kind in; Clusternet puts all its kinds in `clusternet`."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def names(self) -> tuple[str, ...]:
        """Every lower-case name `resolve` accepts for this kind."""
        return (self.kind.lower(), self.plural, self.singular, *self.short_names)

    @classmethod
    def of(cls, model: type[KubeObject]) -> KindInfo:
        return cls(
            model=model,
            kind=model.KIND,
            group=model.GROUP,
            version=model.VERSION,
            plural=model.PLURAL,
            singular=model.KIND.lower(),
            short_names=model.SHORT_NAMES,
            namespaced=model.NAMESPACED,
            bucket=model.PLURAL,
            status_bucket=f"{model.PLURAL}-status" if model.HAS_STATUS else None,
        )


@cache
def _kinds() -> tuple[KindInfo, ...]:
    return tuple(KindInfo.of(model) for model in (*APPS_KINDS, *CLUSTERS_KINDS))


@cache
def _by_name() -> dict[str, KindInfo]:
    table: dict[str, KindInfo] = {}
    for info in _kinds():
        for name in info.names():
            if table.setdefault(name, info) is not info:
                raise RuntimeError(f"name {name!r} is claimed by {table[name].kind} and {info.kind}")
    return table


def all_kinds() -> list[KindInfo]:
    """The served kinds, apps.clusternet.io first, in a stable order."""
    return list(_kinds())


def by_kind(kind: str) -> KindInfo:
    """Exact kind name (`Subscription`); raises UnknownKindError."""
    for info in _kinds():
        if info.kind == kind:
            return info
    raise UnknownKindError(kind)


def resolve(name: str) -> KindInfo:
    """What `cnet get NAME` means: kind in any case, plural, singular or short name."""
    info = _by_name().get(name.lower())
    if info is None:
        raise UnknownKindError(name)
    return info


__all__ = ["CATEGORIES", "KindInfo", "UnknownKindError", "all_kinds", "by_kind", "resolve"]

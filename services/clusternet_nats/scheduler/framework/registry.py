"""Named plugin factories, as Clusternet's runtime.Registry.

A profile names plugins; the registry turns each name into an instance, once per profile, so a
plugin enabled at several extension points (TaintToleration filters and scores) is one object.
An out-of-tree plugin joins by being registered (`Registry.register`, or merged from another
registry) before the profiles are built; the loop that runs plugins never changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.scheduler.framework.interfaces import EMPTY_HANDLE, Handle, Plugin


@dataclass(frozen=True)
class PluginContext:
    """What a factory may give the plugin it builds."""

    handle: Handle = EMPTY_HANDLE
    service: ServiceContext | None = None
    """The scheduler's NATS connection and stores, for plugins that ask other services."""


PluginFactory = Callable[[Mapping[str, Any], PluginContext], Plugin]
"""Builds a plugin from its `pluginConfig` args (empty when none) and the context."""


class RegistryError(ValueError):
    pass


class Registry:
    def __init__(self, factories: Mapping[str, PluginFactory] | None = None) -> None:
        self._factories: dict[str, PluginFactory] = {}
        for name, factory in (factories or {}).items():
            self.register(name, factory)

    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self._factories:
            raise RegistryError(f"a plugin named {name!r} is already registered")
        self._factories[name] = factory

    def merge(self, other: Registry) -> None:
        for name in other.names():
            self.register(name, other._factories[name])

    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def build(self, name: str, args: Mapping[str, Any], context: PluginContext) -> Plugin:
        return self._factories[name](args, context)

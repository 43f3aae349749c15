"""The in-tree plugins by name (Clusternet's NewInTreeRegistry, plus our additions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusternet_nats.scheduler.framework.interfaces import Plugin
from clusternet_nats.scheduler.framework.registry import PluginContext, PluginFactory, Registry
from clusternet_nats.scheduler.plugins.cluster_affinity import ClusterAffinity
from clusternet_nats.scheduler.plugins.default_binder import DefaultBinder
from clusternet_nats.scheduler.plugins.dynamic_assigner import DynamicAssigner
from clusternet_nats.scheduler.plugins.predictor import NAME as PREDICTOR
from clusternet_nats.scheduler.plugins.predictor import predictor_factory
from clusternet_nats.scheduler.plugins.preemption import DefaultPreemption
from clusternet_nats.scheduler.plugins.static_assigner import StaticAssigner
from clusternet_nats.scheduler.plugins.taint_toleration import TaintToleration

OFFLINE = (ClusterAffinity, TaintToleration, StaticAssigner, DynamicAssigner, DefaultBinder, DefaultPreemption)
"""The plugins that need nothing but cached objects."""


def _no_args(cls: type[Any]) -> PluginFactory:
    def factory(args: Mapping[str, Any], context: PluginContext) -> Plugin:
        if args:
            raise ValueError(f"takes no args, got {', '.join(sorted(args))}")
        plugin: Plugin = cls()
        return plugin

    return factory


def offline_registry() -> Registry:
    """The in-tree plugins but the Predictor (which asks the predictor service over NATS)."""
    return Registry({cls.name: _no_args(cls) for cls in OFFLINE})


def in_tree_registry() -> Registry:
    registry = offline_registry()
    registry.register(PREDICTOR, predictor_factory)
    return registry

"""Scheduling profiles by name, built from the configuration and the plugin registry.

A Subscription is scheduled by the profile its `spec.schedulerName` names ("default" unless it
says otherwise); `for_subscription` answers None for a name no profile has, and the scheduler
tells the Subscription so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from clusternet_nats.api.apps import Subscription
from clusternet_nats.scheduler.config import (
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    ConfigError,
    PluginRef,
    SchedulerConfiguration,
    SchedulerProfile,
    default_plugins,
    merge_plugin_set,
)
from clusternet_nats.scheduler.framework import interfaces
from clusternet_nats.scheduler.framework.registry import PluginContext, Registry
from clusternet_nats.scheduler.framework.runtime import Framework, Plugins
from clusternet_nats.scheduler.plugins.registry import in_tree_registry, offline_registry

PROTOCOLS: dict[str, type] = {
    "pre_filter": interfaces.PreFilterPlugin,
    "filter": interfaces.FilterPlugin,
    "post_filter": interfaces.PostFilterPlugin,
    "pre_predict": interfaces.PrePredictPlugin,
    "predict": interfaces.PredictPlugin,
    "pre_score": interfaces.PreScorePlugin,
    "score": interfaces.ScorePlugin,
    "pre_assign": interfaces.PreAssignPlugin,
    "assign": interfaces.AssignPlugin,
    "post_assign": interfaces.PostAssignPlugin,
    "reserve": interfaces.ReservePlugin,
    "permit": interfaces.PermitPlugin,
    "pre_bind": interfaces.PreBindPlugin,
    "bind": interfaces.BindPlugin,
    "post_bind": interfaces.PostBindPlugin,
}
assert set(PROTOCOLS) == set(EXTENSION_POINTS)


def _camel(point: str) -> str:
    head, *rest = point.split("_")
    return head + "".join(part.title() for part in rest)


class Profiles:
    def __init__(self, frameworks: Mapping[str, Framework]) -> None:
        self.frameworks = dict(frameworks)

    def for_subscription(self, sub: Subscription) -> Framework | None:
        return self.frameworks.get(sub.spec.scheduler_name)

    def names(self) -> list[str]:
        return list(self.frameworks)


def build_profiles(
    config: SchedulerConfiguration | None = None,
    registry: Registry | None = None,
    context: PluginContext | None = None,
    source: str = "scheduler config",
) -> Profiles:
    """Every profile of `config` (default: Clusternet's one "default" profile) over `registry`
    (default: the in-tree plugins). A default plugin that is not registered is left out (the
    Predictor, in a scheduler built without one); anything the file names must exist."""
    config = config or SchedulerConfiguration()
    registry = registry or in_tree_registry()
    context = context or PluginContext()
    frameworks = {
        profile.scheduler_name: _build(profile, f"profiles[{i}]", config, registry, context, source)
        for i, profile in enumerate(config.profiles)
    }
    return Profiles(frameworks)


def default_framework() -> Framework:
    """Clusternet's default profile without the Predictor, which needs NATS: for tools and tests
    that need no predictions or bring their own Predict plugin."""
    return build_profiles(registry=offline_registry()).frameworks[DEFAULT_SCHEDULER_NAME]


@dataclass(frozen=True)
class _Enabled:
    point: str
    ref: PluginRef
    path: str
    """Where the file enables it, for errors."""


def check_config(
    config: SchedulerConfiguration, registry: Registry | None = None, source: str = "scheduler config"
) -> None:
    """Every plugin the file names is registered; run at start, before anything connects (the
    rest, which needs the plugins built, is checked when the profiles are built)."""
    registry = registry or in_tree_registry()
    for i, profile in enumerate(config.profiles):
        _enabled(profile, f"profiles[{i}]", registry, source)


def _enabled(profile: SchedulerProfile, where: str, registry: Registry, source: str) -> list[_Enabled]:
    """The profile's plugins per extension point, defaults merged; unregistered defaults left out."""
    for k, entry in enumerate(profile.plugin_config):
        if entry.name not in registry:
            raise ConfigError(f"{source}: {where}.pluginConfig[{k}].name: unknown plugin {entry.name!r}")
    enabled = []
    defaults = default_plugins()
    for point in EXTENSION_POINTS:
        custom = getattr(profile.plugins, point)
        custom_names = [p.name for p in custom.enabled]
        for ref in merge_plugin_set(getattr(defaults, point), custom):
            path = f"{where}.plugins.{_camel(point)}" + (
                f".enabled[{custom_names.index(ref.name)}]" if ref.name in custom_names else " (default)"
            )
            if ref.name not in registry:
                if ref.name not in custom_names:
                    continue
                known = ", ".join(registry.names())
                raise ConfigError(f"{source}: {path}.name: unknown plugin {ref.name!r} (registered: {known})")
            enabled.append(_Enabled(point, ref, path))
    return enabled


def _build(
    profile: SchedulerProfile,
    where: str,
    config: SchedulerConfiguration,
    registry: Registry,
    context: PluginContext,
    source: str,
) -> Framework:
    args = {entry.name: entry.args for entry in profile.plugin_config}
    instances: dict[str, interfaces.Plugin] = {}
    plugins = Plugins()
    for entry in _enabled(profile, where, registry, source):
        name = entry.ref.name
        plugin = instances.get(name) or _instantiate(entry.ref, args, registry, context, source, where, profile)
        instances[name] = plugin
        if not isinstance(plugin, PROTOCOLS[entry.point]):
            point = _camel(entry.point)
            raise ConfigError(f"{source}: {entry.path}.name: plugin {name!r} has no {point} extension point")
        _add(plugins, entry.point, plugin, entry.ref)
    return Framework(
        plugins=plugins,
        profile_name=profile.scheduler_name,
        percentage_of_clusters_to_score=config.percentage_of_clusters_to_score,
        handle=context.handle,
    )


def _instantiate(
    ref: PluginRef,
    args: Mapping[str, Mapping[str, Any]],
    registry: Registry,
    context: PluginContext,
    source: str,
    where: str,
    profile: SchedulerProfile,
) -> interfaces.Plugin:
    try:
        return registry.build(ref.name, args.get(ref.name, {}), context)
    except (ValueError, TypeError) as err:
        index = next((k for k, entry in enumerate(profile.plugin_config) if entry.name == ref.name), None)
        field = f"{where}.pluginConfig[{index}].args" if index is not None else f"{where} plugin {ref.name!r}"
        raise ConfigError(f"{source}: {field}: {err}") from None


def _add(plugins: Plugins, point: str, plugin: interfaces.Plugin, ref: PluginRef) -> None:
    if point == "score":
        plugins.score.append((cast(interfaces.ScorePlugin, plugin), ref.weight or 1))
    else:
        getattr(plugins, point).append(plugin)

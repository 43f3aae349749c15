"""The scheduler's configuration file: profiles, their plugins, and score weights.

The format is Clusternet's SchedulerConfiguration (pkg/scheduler/apis/types.go), itself
kube-scheduler's: each profile, selected by a Subscription's `spec.schedulerName`, enables or
disables plugins per extension point on top of the default set, and gives each Score plugin a
weight. `disabled: [{name: "*"}]` drops every default of that point. Example:

    profiles:
      - schedulerName: default
        plugins:
          score:
            enabled: [{name: TaintToleration, weight: 5}]
      - schedulerName: no-preemption
        plugins:
          postFilter:
            disabled: [{name: DefaultPreemption}]
        pluginConfig:
          - name: SomePlugin
            args: {key: value}

Read with the one YAML reader (api/yamljson); a bad file is a ConfigError naming the file and
the field (`profiles[1].plugins.score.enabled[0].name: unknown plugin "Foo"`).
"""

from __future__ import annotations

from typing import Any

from clusternet_nats.api.loader import field_path
from clusternet_nats.api.meta import Model
from clusternet_nats.api.yamljson import DecodeError, load_yaml
from pydantic import Field, ValidationError

DEFAULT_SCHEDULER_NAME = "default"
CONFIG_ENV = "CNET_SCHEDULER_CONFIG"


class ConfigError(ValueError):
    """The configuration is malformed; the message names the file and the field."""


class PluginRef(Model):
    name: str = Field(min_length=1)
    weight: int | None = Field(default=None, ge=0)
    """Score plugins only; 0 or unset means 1, as kube-scheduler."""


class PluginSet(Model):
    enabled: list[PluginRef] = Field(default_factory=list)
    disabled: list[PluginRef] = Field(default_factory=list)


class PluginsConfig(Model):
    pre_filter: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    post_filter: PluginSet = Field(default_factory=PluginSet)
    pre_predict: PluginSet = Field(default_factory=PluginSet)
    predict: PluginSet = Field(default_factory=PluginSet)
    pre_score: PluginSet = Field(default_factory=PluginSet)
    score: PluginSet = Field(default_factory=PluginSet)
    pre_assign: PluginSet = Field(default_factory=PluginSet)
    assign: PluginSet = Field(default_factory=PluginSet)
    post_assign: PluginSet = Field(default_factory=PluginSet)
    reserve: PluginSet = Field(default_factory=PluginSet)
    permit: PluginSet = Field(default_factory=PluginSet)
    pre_bind: PluginSet = Field(default_factory=PluginSet)
    bind: PluginSet = Field(default_factory=PluginSet)
    post_bind: PluginSet = Field(default_factory=PluginSet)


EXTENSION_POINTS = tuple(PluginsConfig.model_fields)


class PluginConfig(Model):
    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class SchedulerProfile(Model):
    scheduler_name: str = Field(min_length=1)
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    plugin_config: list[PluginConfig] = Field(default_factory=list)


class SchedulerConfiguration(Model):
    api_version: str | None = None
    kind: str | None = None
    profiles: list[SchedulerProfile] = Field(
        default_factory=lambda: [SchedulerProfile(scheduler_name=DEFAULT_SCHEDULER_NAME)], min_length=1
    )
    percentage_of_clusters_to_score: int = Field(default=0, ge=0, le=100)
    """0: Clusternet's adaptive share for dividing over more than 100 clusters."""


def default_plugins() -> PluginsConfig:
    """Clusternet's default profile (apis/default_plugins.go), plus ClusterAffinity as the first
    filter (Clusternet lists clusters by affinity before filtering) and DefaultPreemption (the
    `priority` Clusternet declares but never acts on)."""

    def names(*plugins: str | tuple[str, int]) -> PluginSet:
        refs = [PluginRef(name=p) if isinstance(p, str) else PluginRef(name=p[0], weight=p[1]) for p in plugins]
        return PluginSet(enabled=refs)

    return PluginsConfig(
        filter=names("ClusterAffinity", "TaintToleration"),
        post_filter=names("DefaultPreemption"),
        predict=names("Predictor"),
        score=names(("TaintToleration", 3)),
        pre_assign=names("DynamicAssigner"),
        assign=names("StaticAssigner", "DynamicAssigner"),
        bind=names("DefaultBinder"),
    )


def merge_plugin_set(defaults: PluginSet, custom: PluginSet) -> list[PluginRef]:
    """kube-scheduler's mergePluginSet: defaults minus the disabled ("*": all), a default enabled
    again is reconfigured in place, the other enabled ones are appended in order."""
    disabled = {p.name for p in custom.disabled}
    enabled = {p.name: p for p in custom.enabled}
    merged: list[PluginRef] = []
    replaced: set[str] = set()
    if "*" not in disabled:
        for plugin in defaults.enabled:
            if plugin.name in disabled:
                continue
            if plugin.name in enabled:
                plugin = enabled[plugin.name]
                replaced.add(plugin.name)
            merged.append(plugin)
    merged.extend(p for p in custom.enabled if p.name not in replaced)
    return merged


def parse_config(text: str, source: str = "scheduler config") -> SchedulerConfiguration:
    try:
        data = load_yaml(text)
        config = SchedulerConfiguration.model_validate(data if data is not None else {})
    except DecodeError as err:
        raise ConfigError(f"{source}: not valid YAML: {err}") from None
    except ValidationError as err:
        problems = "; ".join(f"{field_path(e['loc']) or '(root)'}: {e['msg']}" for e in err.errors())
        raise ConfigError(f"{source}: {problems}") from None
    seen: set[str] = set()
    for i, profile in enumerate(config.profiles):
        if profile.scheduler_name in seen:
            raise ConfigError(f"{source}: profiles[{i}].schedulerName: duplicate {profile.scheduler_name!r}")
        seen.add(profile.scheduler_name)
    return config

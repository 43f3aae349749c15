"""Profiles by schedulerName, built from the configuration file and the plugin registry."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.__main__ import app, read_config
from clusternet_nats.scheduler.algorithm import schedule
from clusternet_nats.scheduler.config import ConfigError, default_plugins, parse_config
from clusternet_nats.scheduler.framework.interfaces import SUCCESS, Plugin, Status
from clusternet_nats.scheduler.framework.registry import PluginContext, Registry, RegistryError
from clusternet_nats.scheduler.plugins.registry import in_tree_registry, offline_registry
from clusternet_nats.scheduler.profiles import build_profiles
from typer.testing import CliRunner

from tests.scheduler.conftest import build_cluster, build_subscription


def names(plugins: Sequence[object]) -> list[str]:
    return [getattr(p, "name", "") for p in plugins]


def test_default_profile_is_clusternets() -> None:
    assert [p.name for p in default_plugins().predict.enabled] == ["Predictor"]
    assert "Predictor" in in_tree_registry()
    with pytest.raises(ConfigError, match="plugin 'Predictor': needs the scheduler's NATS connection"):
        build_profiles()
    profiles = build_profiles(registry=offline_registry())
    assert profiles.names() == ["default"]
    plugins = profiles.frameworks["default"].plugins
    assert plugins.predict == [], "a default plugin that is not registered is left out"
    assert names(plugins.filter) == ["ClusterAffinity", "TaintToleration"]
    assert [(p.name, w) for p, w in plugins.score] == [("TaintToleration", 3)]
    assert names(plugins.pre_assign) == ["DynamicAssigner"]
    assert names(plugins.assign) == ["StaticAssigner", "DynamicAssigner"]
    assert names(plugins.bind) == ["DefaultBinder"]
    assert names(plugins.post_filter) == ["DefaultPreemption"]
    assert plugins.filter[1] is plugins.score[0][0], "one TaintToleration instance for both points"


class GpuOnly:
    """An out-of-tree filter: only clusters labelled gpu=true, with a configurable label."""

    name = "GpuOnly"

    def __init__(self, label: str) -> None:
        self.label = label

    def filter(self, sub: Subscription, cluster: ManagedCluster) -> Status:
        ok = (cluster.metadata.labels or {}).get(self.label) == "true"
        return SUCCESS if ok else Status.unschedulable(self.name, "cluster(s) had no GPU")


def gpu_factory(args: Mapping[str, Any], context: PluginContext) -> Plugin:
    return GpuOnly(str(args.get("label", "gpu")))


CONFIG = """
profiles:
  - schedulerName: default
    plugins:
      score:
        enabled: [{name: TaintToleration, weight: 5}]
  - schedulerName: gpu
    plugins:
      filter:
        enabled: [{name: GpuOnly}]
        disabled: [{name: TaintToleration}]
      postFilter:
        disabled: [{name: "*"}]
    pluginConfig:
      - name: GpuOnly
        args: {label: accelerator}
"""


async def test_an_out_of_tree_plugin_joins_by_registration_and_a_profile_selects_it() -> None:
    registry = offline_registry()
    registry.register("GpuOnly", gpu_factory)
    profiles = build_profiles(parse_config(CONFIG), registry)
    default, gpu = profiles.frameworks["default"], profiles.frameworks["gpu"]
    assert [(p.name, w) for p, w in default.plugins.score] == [("TaintToleration", 5)], "weight reconfigured"
    assert names(gpu.plugins.filter) == ["ClusterAffinity", "GpuOnly"]
    assert gpu.plugins.post_filter == []
    clusters = [build_cluster("ns-a", labels={"accelerator": "true"}), build_cluster("ns-b")]
    sub = build_subscription("s", "app", [{"clusterAffinity": {}}], schedulerName="gpu")
    framework = profiles.for_subscription(sub)
    assert framework is gpu
    decision = await schedule(framework, sub, clusters, None, None)
    assert decision.binding.binding_clusters == ["ns-a/mc"]
    unknown = build_subscription("s", "app", [{"clusterAffinity": {}}], schedulerName="nope")
    assert profiles.for_subscription(unknown) is None


def test_a_name_registers_once() -> None:
    registry = Registry({"GpuOnly": gpu_factory})
    with pytest.raises(RegistryError, match="'GpuOnly' is already registered"):
        registry.merge(Registry({"GpuOnly": gpu_factory}))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("profiles: [{schedulerName: a}, {schedulerName: a}]", "profiles[1].schedulerName: duplicate 'a'"),
        # validation_test.go: a profile needs a schedulerName
        ("profiles: [{schedulerName: ''}]", "profiles[0].schedulerName: String should have at least 1 character"),
        ("profiles: []", "profiles: List should have at least 1 item"),
        ("profiles: [{schedulerName: a, plugins: {filtre: {}}}]", "profiles[0].plugins.filtre: Extra inputs"),
        (
            "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: X, weight: -1}]}}}]",
            "profiles[0].plugins.score.enabled[0].weight: Input should be greater than or equal to 0",
        ),
        ("profiles: [", "not valid YAML"),
        ("percentageOfClustersToScore: 101", "percentageOfClustersToScore: Input should be less than or equal to 100"),
    ],
)
def test_a_bad_file_names_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^sched\.yaml: .*{re.escape(message)}"):
        parse_config(text, "sched.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "profiles: [{schedulerName: a, plugins: {filter: {enabled: [{name: Nope}]}}}]",
            "profiles[0].plugins.filter.enabled[0].name: unknown plugin 'Nope' (registered: ClusterAffinity,",
        ),
        (
            "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: StaticAssigner}]}}}]",
            "profiles[0].plugins.score.enabled[0].name: plugin 'StaticAssigner' has no score extension point",
        ),
        (
            "profiles: [{schedulerName: a, pluginConfig: [{name: Nope}]}]",
            "profiles[0].pluginConfig[0].name: unknown plugin 'Nope'",
        ),
        (
            "profiles: [{schedulerName: a, pluginConfig: [{name: TaintToleration, args: {x: 1}}]}]",
            "profiles[0].pluginConfig[0].args: takes no args, got x",
        ),
    ],
)
def test_a_bad_profile_names_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^sched\.yaml: {re.escape(message)}"):
        build_profiles(parse_config(text, "sched.yaml"), offline_registry(), source="sched.yaml")


def test_the_scheduler_reads_its_config_file(tmp_path: Path) -> None:
    assert read_config(None).profiles[0].scheduler_name == "default"
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG)
    assert [p.scheduler_name for p in read_config(path).profiles] == ["default", "gpu"]
    with pytest.raises(ConfigError, match=r"missing\.yaml: No such file"):
        read_config(tmp_path / "missing.yaml")


class Recorder:
    """Reserve, Permit and PostBind at once, recording the order it was called in."""

    name = "Recorder"

    def __init__(self, permit: bool) -> None:
        self.allow = permit
        self.calls: list[str] = []

    async def reserve(self, sub: Subscription, binding: SubscriptionBinding) -> Status:
        self.calls.append("reserve")
        return SUCCESS

    async def unreserve(self, sub: Subscription, binding: SubscriptionBinding) -> None:
        self.calls.append("unreserve")

    async def permit(self, sub: Subscription, binding: SubscriptionBinding) -> Status:
        self.calls.append("permit")
        return SUCCESS if self.allow else Status.unschedulable(self.name, "not now")

    async def post_bind(self, sub: Subscription, binding: SubscriptionBinding) -> None:
        self.calls.append("postBind")


class Store:
    def __init__(self) -> None:
        self.written: list[SubscriptionBinding] = []

    async def write_binding(self, sub: Subscription, binding: SubscriptionBinding) -> bool:
        self.written.append(binding)
        return True


BIND_CYCLE = """
profiles:
  - schedulerName: default
    plugins:
      reserve: {enabled: [{name: Recorder}]}
      permit: {enabled: [{name: Recorder}]}
      postBind: {enabled: [{name: Recorder}]}
"""


@pytest.mark.parametrize("permit", [True, False])
async def test_the_bind_cycle_runs_in_order_and_unreserves_on_failure(permit: bool) -> None:
    recorder = Recorder(permit)
    registry = offline_registry()
    registry.register("Recorder", lambda args, context: recorder)
    framework = build_profiles(parse_config(BIND_CYCLE), registry).frameworks["default"]
    sub = build_subscription("s", "app", [{"clusterAffinity": {}}])
    binding = SubscriptionBinding(subscription_uid="u", spec_hash=1, binding_clusters=["ns-a/mc"])
    store = Store()
    status = await framework.run_bind_cycle(sub, binding, store)
    if permit:
        assert status.is_success
        assert store.written == [binding]
        assert recorder.calls == ["reserve", "permit", "postBind"]
    else:
        assert status.reasons == ("not now",)
        assert store.written == []
        assert recorder.calls == ["reserve", "permit", "unreserve"]


@pytest.mark.parametrize(
    ("plugins", "field"),
    [
        ("{score: {enabled: [{name: X, weight: -1}]}}", "score.enabled[0].weight"),
        ("{filter: {enabled: [{name: Nope}]}}", "filter.enabled[0].name"),
    ],
)
def test_the_scheduler_command_refuses_a_bad_config_naming_the_field(tmp_path: Path, plugins: str, field: str) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(f"profiles: [{{schedulerName: a, plugins: {plugins}}}]")
    result = CliRunner().invoke(app, ["--config", str(path)], env={"COLUMNS": "400"})
    assert result.exit_code == 2, "refused before connecting to anything"
    assert f"profiles[0].plugins.{field}" in " ".join(result.output.split())

"""Rendering a Base's feeds for its cluster into Descriptions, as Clusternet's populateDescriptions.

Ordinary objects go into `<base>-generic` (one JSON document per object, in feed order), charts
into `<base>-helm` (each HelmChart in `chartRaw`, its merged Helm values at the same index of
`raw`, where Clusternet's Helm deployer reads them). Objects are rendered without the fields a
server sets (uid, resourceVersion...) so that a Description changes only when its content does.
Pure functions: the reconciler gathers the inputs from the caches and writes the result.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from clusternet_nats.api.apps import (
    Base,
    ChartReference,
    DeployerType,
    Description,
    DescriptionSpec,
    Globalization,
    HelmChart,
    Localization,
    Manifest,
    OverrideConfig,
    OverrideType,
    Subscription,
)
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.meta import Feed
from clusternet_nats.deployer.bases import derived_metadata
from clusternet_nats.deployer.overrides import OverrideError, SourcedOverride, apply_overrides, select_overrides
from clusternet_nats.domain.feeds import Selector, chart_feed, feed_key, feed_selector, manifest_selectors
from clusternet_nats.domain.patches import merge_patch
from clusternet_nats.domain.replicas import replica_json_path

GENERIC_SUFFIX = "-generic"
HELM_SUFFIX = "-helm"
SERVER_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields")
# A chart override may change the version or the repo, never which chart or where it installs.
CHART_IDENTITY_FIELDS = ("chart", "targetNamespace")
REPLICAS_OVERRIDE = "dividing scheduling replicas"


@dataclass(frozen=True)
class Target:
    """What rendering needs to know about the cluster a Base is for."""

    namespace: str
    labels: Mapping[str, str]
    subscription: Subscription
    replicas: Mapping[str, int] = field(default_factory=dict)
    """This cluster's share of each divided feed, by feed key."""
    globalizations: Sequence[Globalization] = ()
    localizations: Sequence[Localization] = ()

    def overrides(self, selectors: AbstractSet[Selector]) -> list[SourcedOverride]:
        return select_overrides(selectors, self.namespace, self.labels, self.globalizations, self.localizations)


def cluster_replicas(binding: SubscriptionBinding, index: int) -> dict[str, int]:
    """The replicas the scheduler gave the cluster at `index` of bindingClusters, by feed key."""
    return {key: replicas[index] for key, replicas in binding.replicas.items() if index < len(replicas)}


def short_replicas(binding: SubscriptionBinding) -> list[str]:
    """Feed keys whose replicas do not cover every bound cluster (Clusternet's BadSchedulingResult)."""
    bound = len(binding.binding_clusters)
    return sorted(key for key, replicas in binding.replicas.items() if replicas and len(replicas) < bound)


def clean(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without status and the metadata a server fills in."""
    result = {key: value for key, value in obj.items() if key != "status"}
    metadata = result.get("metadata")
    if isinstance(metadata, dict):
        result["metadata"] = {key: value for key, value in metadata.items() if key not in SERVER_FIELDS}
    return result


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def render_generic(
    manifests: Sequence[tuple[Feed, Manifest]],
    target: Target,
    selected: Sequence[list[SourcedOverride]] | None = None,
) -> DescriptionSpec:
    """Raises OverrideError. `selected`: the overrides of each manifest, when already chosen."""
    raw: list[bytes] = []
    for index, (feed, manifest) in enumerate(manifests):
        overrides = list(selected[index]) if selected is not None else target.overrides(manifest_selectors(manifest))
        replicas = target.replicas.get(feed_key(feed))
        if replicas is not None:
            path = replica_json_path(feed.api_version, feed.kind)
            overrides.append(_replicas_override(target.subscription, replicas, path))
        rendered, _ = apply_overrides(overrides, generic=clean(manifest.template))
        raw.append(_dumps(rendered))
    return DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw)


def _replicas_override(sub: Subscription, replicas: int, path: str) -> SourcedOverride:
    # Clusternet writes this as a Localization of the highest priority at the feed's
    # replicaJsonPath; applying it last here is the same, without an object per cluster to keep.
    patch = [{"op": "add", "path": path, "value": replicas}]
    config = OverrideConfig(name=REPLICAS_OVERRIDE, type=OverrideType.JSON_PATCH, value=json.dumps(patch))
    return SourcedOverride(sub, config)


def render_helm(
    charts: Sequence[HelmChart], target: Target, selected: Sequence[list[SourcedOverride]] | None = None
) -> DescriptionSpec:
    """Raises OverrideError. `selected`: the overrides of each chart, when already chosen."""
    refs: list[ChartReference] = []
    chart_raw: list[bytes] = []
    values: list[bytes] = []
    for index, chart in enumerate(charts):
        overrides = selected[index] if selected is not None else target.overrides(_chart_selectors(chart))
        chart_values, chart_patch = apply_overrides(overrides)
        rendered = clean(chart.to_json_dict())
        if isinstance(chart_patch, dict):
            rendered = merge_patch(rendered, _without_chart_identity(chart_patch))
        refs.append(ChartReference(name=chart.name, namespace=chart.namespace))
        chart_raw.append(_dumps(rendered))
        values.append(_dumps(chart_values if chart_values is not None else {}))
    return DescriptionSpec(deployer=DeployerType.HELM, charts=refs, chart_raw=chart_raw, raw=values)


def _chart_selectors(chart: HelmChart) -> set[Selector]:
    return {feed_selector(chart_feed(chart.namespace, chart.name))}


def _without_chart_identity(patch: dict[str, Any]) -> dict[str, Any]:
    spec = patch.get("spec")
    if not isinstance(spec, dict):
        return patch
    return {**patch, "spec": {key: value for key, value in spec.items() if key not in CHART_IDENTITY_FIELDS}}


def description_for(base: Base, spec: DescriptionSpec) -> Description:
    """The Description of `spec` for `base`: named by its deployer, labelled with the Base's labels."""
    suffix = HELM_SUFFIX if spec.deployer == DeployerType.HELM else GENERIC_SUFFIX
    return Description.new(
        base.name + suffix,
        base.namespace,
        metadata=derived_metadata(base, base.metadata.labels or {}),
        spec=spec,
    )


def _sources(overrides: Sequence[SourcedOverride]) -> tuple[tuple[str | None, ...], ...]:
    """Which revisions of which objects `overrides` come from: the same sources give the same
    overrides, in the same order (select_overrides takes every override of a source it selects)."""
    return tuple(
        (o.source.kind, o.source.namespace, o.source.name, o.source.metadata.uid, o.source.metadata.resource_version)
        for o in overrides
    )


class Renderings:
    """One Subscription's resolved feeds rendered for its clusters, each distinct input once.

    Clusters that select the same overrides (the same revisions of the same Globalizations and
    Localizations) and get the same replica shares get the same Descriptions, so a fleet under a
    few Globalizations is rendered a few times, not once per cluster. Choosing a cluster's
    overrides stays per cluster (it is what tells clusters apart) and is cheap beside applying
    them and encoding the result. A failed override fails the same way for every cluster with
    those inputs, so the OverrideError is kept too.
    """

    def __init__(self, manifests: Sequence[tuple[Feed, Manifest]], charts: Sequence[HelmChart]) -> None:
        self.manifests = manifests
        self.charts = charts
        self._done: dict[Hashable, list[DescriptionSpec] | OverrideError] = {}

    @property
    def distinct(self) -> int:
        """How many different renderings were made (what tests and benches look at)."""
        return len(self._done)

    def render(self, target: Target) -> list[DescriptionSpec]:
        """The specs of `target`'s Descriptions (Generic, then Helm; each only if it has feeds).
        Raises OverrideError."""
        generic = [target.overrides(manifest_selectors(manifest)) for _, manifest in self.manifests]
        helm = [target.overrides(_chart_selectors(chart)) for chart in self.charts]
        shares = tuple(target.replicas.get(feed_key(feed)) for feed, _ in self.manifests)
        key = (tuple(map(_sources, generic)), tuple(map(_sources, helm)), shares)
        found = self._done.get(key)
        if found is None:
            try:
                found = []
                if self.manifests:
                    found.append(render_generic(self.manifests, target, generic))
                if self.charts:
                    found.append(render_helm(self.charts, target, helm))
            except OverrideError as err:
                found = err
            self._done[key] = found
        if isinstance(found, OverrideError):
            raise found
        return found

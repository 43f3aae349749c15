"""The HelmReleases a Helm Description stands for, as Clusternet's Helm deployer makes them.

A Helm Description carries, at the same index, a chart reference, the rendered HelmChart
(`chartRaw`, with `overrideChart` patches applied) and its merged Helm values (`raw`). Each
becomes one HelmRelease in the Description's namespace, named `<description>-<chart namespace>-
<chart name>`, whose release name defaults to the chart's name, installed into the chart's
targetNamespace with the chart's HelmOptions and the values as `overrides`. Pure: whoever holds a
Description (the agent installing it, the hub showing it) derives the same releases.
"""

from __future__ import annotations

import json
from typing import Any

from clusternet_nats.api.apps import (
    ChartReference,
    Description,
    DescriptionStatus,
    HelmChart,
    HelmRelease,
    HelmReleaseSpec,
    HelmReleaseStatus,
    ManifestStatus,
)
from clusternet_nats.api.meta import ObjectMeta
from pydantic import ValidationError

DEPLOYED = "deployed"
FAILED = "failed"
"""Helm's release statuses (`helm.sh/helm/v3/pkg/release.Status`) that decide availability."""


def release_object_name(description: str, chart: ChartReference) -> str:
    """Clusternet's GenerateHelmReleaseName."""
    return f"{description}-{chart.namespace}-{chart.name}"


def chart_status(ref: ChartReference, status: HelmReleaseStatus) -> ManifestStatus:
    """How a Helm Description's status reports one chart's release: the HelmChart feed, observed
    as the release's status (so the Subscription's aggregated status finds the chart available)."""
    return ManifestStatus(
        api_version=HelmChart.api_version_string(),
        kind=HelmChart.KIND,
        namespace=ref.namespace,
        name=ref.name,
        observed_status=status.to_json_dict(),
    )


def release_status(ref: ChartReference, status: DescriptionStatus | None) -> HelmReleaseStatus | None:
    """The status of chart `ref`'s release as a Description's status reports it; None if absent."""
    for manifest in (status.manifest_statuses or []) if status is not None else []:
        if (manifest.kind, manifest.namespace, manifest.name) == (HelmChart.KIND, ref.namespace, ref.name):
            try:
                return HelmReleaseStatus.model_validate(manifest.observed_status or {})
            except ValidationError:
                return None
    return None


def values_of(release: HelmRelease) -> dict[str, Any]:
    """The release's Helm values: its `overrides` decoded ({} when none)."""
    values = json.loads(release.spec.overrides) if release.spec.overrides else {}
    return values if isinstance(values, dict) else {}


ChartRelease = tuple[ChartReference, HelmRelease]
"""A HelmRelease and the HelmChart (feed) it was made from."""


def releases_of(desc: Description) -> tuple[list[ChartRelease], list[str]]:
    """The Description's HelmReleases with their charts, and why the entries that make none do not."""
    refs = desc.spec.charts or []
    charts = desc.spec.chart_raw or []
    raw = desc.spec.raw or []
    if not len(refs) == len(charts) == len(raw):
        lengths = f"charts {len(refs)}, chartRaw {len(charts)}, raw {len(raw)}"
        return [], [f"Description {desc.namespaced_name()}: unequal lengths of spec ({lengths})"]
    releases: list[ChartRelease] = []
    failures: list[str] = []
    for index, (ref, chart_data, values_data) in enumerate(zip(refs, charts, raw, strict=True)):
        try:
            chart = HelmChart.model_validate_json(chart_data)
        except ValidationError as err:
            details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            failures.append(f"chartRaw[{index}] is not a valid HelmChart: {details}")
            continue
        try:
            values = json.loads(values_data) if values_data.strip() else {}
        except ValueError as err:
            failures.append(f"raw[{index}] (values of HelmChart {ref.namespace}/{ref.name}) is not JSON: {err}")
            continue
        if not isinstance(values, dict):
            failures.append(f"raw[{index}] (values of HelmChart {ref.namespace}/{ref.name}) is not a mapping")
            continue
        spec = HelmReleaseSpec.model_validate(
            {
                **chart.spec.to_json_dict(),
                "releaseName": chart.name,
                "overrides": json.dumps(values, sort_keys=True, separators=(",", ":")).encode(),
            }
        )
        meta = ObjectMeta(labels=chart.metadata.labels, annotations=chart.metadata.annotations)
        release = HelmRelease.new(release_object_name(desc.name, ref), desc.namespace, metadata=meta, spec=spec)
        releases.append((ref, release))
    return releases, failures

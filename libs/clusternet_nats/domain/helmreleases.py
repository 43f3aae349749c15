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

from clusternet_nats.api.apps import ChartReference, Description, HelmChart, HelmRelease, HelmReleaseSpec
from clusternet_nats.api.meta import ObjectMeta
from pydantic import ValidationError


def release_object_name(description: str, chart: ChartReference) -> str:
    """Clusternet's GenerateHelmReleaseName."""
    return f"{description}-{chart.namespace}-{chart.name}"


def values_of(release: HelmRelease) -> dict[str, Any]:
    """The release's Helm values: its `overrides` decoded ({} when none)."""
    values = json.loads(release.spec.overrides) if release.spec.overrides else {}
    return values if isinstance(values, dict) else {}


def releases_of(desc: Description) -> tuple[list[HelmRelease], list[str]]:
    """The Description's HelmReleases, and why the entries that make none do not."""
    refs = desc.spec.charts or []
    charts = desc.spec.chart_raw or []
    raw = desc.spec.raw or []
    if not len(refs) == len(charts) == len(raw):
        lengths = f"charts {len(refs)}, chartRaw {len(charts)}, raw {len(raw)}"
        return [], [f"Description {desc.namespaced_name()}: unequal lengths of spec ({lengths})"]
    releases: list[HelmRelease] = []
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
        releases.append(
            HelmRelease.new(release_object_name(desc.name, ref), desc.namespace, metadata=meta, spec=spec)
        )
    return releases, failures

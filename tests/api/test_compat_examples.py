"""Clusternet's own examples load unchanged, and become what a Clusternet hub would store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import (
    DividingType,
    DynamicDividingStrategy,
    Globalization,
    HelmChart,
    Localization,
    Manifest,
    OverrideType,
    PreemptionPolicy,
    SchedulingStrategy,
    Subscription,
)
from clusternet_nats.api.loader import load_path
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.domain.feeds import feed_selector, format_feed, manifest_selectors
from clusternet_nats.testing import compat

EXAMPLES = compat.compat_path(compat.EXAMPLES)


def _load(relpath: str) -> list[KubeObject]:
    return load_path(EXAMPLES / relpath)


def _one(objects: list[KubeObject], kind: type[Any], name: str) -> Any:
    (found,) = [o for o in objects if isinstance(o, kind) and o.name == name]
    return found


def _all_files() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.yaml"))


@pytest.mark.parametrize("path", _all_files(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_file_loads_and_round_trips(path: Path) -> None:
    objects = load_path(path)
    assert objects
    for obj in objects:
        data = obj.to_json_dict()
        assert type(obj).model_validate(data) == obj
        assert type(obj).model_validate_json(obj.to_json()) == obj
        assert _nulls(data) == []


def _nulls(value: Any, path: str = "") -> list[str]:
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _nulls(v, f"{path}[{i}]")]
    return []


def test_whole_corpus_loads_as_a_directory_in_sorted_order() -> None:
    objects = _load(".")
    assert len(objects) == 44
    assert sum(isinstance(o, Subscription) for o in objects) == 10
    assert sum(isinstance(o, Manifest) for o in objects) == 24
    assert sum(isinstance(o, HelmChart) for o in objects) == 3
    assert sum(isinstance(o, Globalization) for o in objects) == 4
    assert sum(isinstance(o, Localization) for o in objects) == 3
    # Sorted recursive walk: dynamic-dividing-scheduling/nginx-deployment.yaml comes first.
    assert objects[0].name == "namespaces.qux"


def test_replication_subscription_gets_clusternet_defaults() -> None:
    sub = _one(_load("replication-scheduling/subscription.yaml"), Subscription, "app-demo")
    assert sub.namespace == "default"
    assert len(sub.spec.feeds) == 4
    assert sub.spec.feeds[0].kind == "HelmChart"
    assert sub.spec.feeds[1].namespace is None
    assert sub.spec.scheduling_strategy is SchedulingStrategy.REPLICATION
    assert sub.spec.preemption_policy is PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    assert sub.spec.scheduler_name == "default"
    assert sub.spec.dividing_scheduling is None
    selector = sub.spec.subscribers[0].cluster_affinity
    assert selector.matches({"clusters.clusternet.io/cluster-id": "dc91021d-2361-4f6d-a404-7c33b9e01118"})
    spec = sub.to_json_dict()["spec"]
    assert spec["schedulingStrategy"] == "Replication"
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["schedulerName"] == "default"
    assert "priority" not in spec


def test_static_and_dynamic_dividing() -> None:
    objects = _load("static-dividing-scheduling/subscription.yaml")
    static = _one(objects, Subscription, "static-dividing-scheduling-demo")
    assert static.spec.scheduling_strategy is SchedulingStrategy.DIVIDING
    assert static.spec.dividing_scheduling is not None
    assert static.spec.dividing_scheduling.type is DividingType.STATIC
    assert [s.weight for s in static.spec.subscribers] == [1, 2]

    dynamic = _one(_load("fieldpatch/subscription.yaml"), Subscription, "dynamic-dividing-scheduling-demo")
    assert dynamic.namespace == "default"  # no namespace in the file
    assert dynamic.spec.priority == 100
    assert dynamic.spec.dividing_scheduling is not None
    assert dynamic.spec.dividing_scheduling.dynamic_dividing is not None
    assert dynamic.spec.dividing_scheduling.dynamic_dividing.strategy is DynamicDividingStrategy.SPREAD


def test_scheduling_by_sub_group() -> None:
    objects = _load("scheduling-group")
    sub = _one(objects, Subscription, "replication-scheduling-demo")
    assert sub.spec.scheduling_by_sub_group is True
    assert [s.sub_group_strategy.min_clusters for s in sub.spec.subscribers if s.sub_group_strategy] == [2, 1]


def test_fieldpatch_globalization_is_cluster_scoped() -> None:
    glob = _one(_load("fieldpatch/server-configmap-globalization.yaml"), Globalization, "server-conf-overrides-demo")
    assert glob.metadata.namespace is None  # the file says `namespace: qux`; kubectl drops it too
    assert glob.namespaced_name() == "server-conf-overrides-demo"
    assert glob.spec.priority == 600
    (override,) = glob.spec.overrides or []
    assert override.type is OverrideType.FIELD_MERGE_PATCH
    assert override.field_path == "/data/server.conf"
    assert '"zone_id": "zone-1"' in override.value
    assert "namespace" not in glob.to_json_dict()["metadata"]
    assert glob.to_json_dict()["spec"]["overridePolicy"] == "ApplyLater"


def test_localizations_keep_their_namespace_and_default_policy() -> None:
    objects = _load("replication-scheduling/localization.yaml")
    locs = [o for o in objects if isinstance(o, Localization)]
    assert [loc.spec.priority for loc in locs] == [500, 600, 300]
    assert {loc.namespace for loc in locs} == {"clusternet-5l82l"}
    assert locs[0].spec.overrides is not None and locs[0].spec.overrides[2].override_chart is True


def test_helm_charts_get_defaults() -> None:
    chart = _one(_load("oci/oci-chart-mysql.yaml"), HelmChart, "mysql")
    assert chart.spec.repo == "oci://myoci.registry.com:5000/helm-charts"
    assert chart.spec.create_namespace is True
    assert chart.spec.timeout_seconds == 300
    spec = chart.to_json_dict()["spec"]
    assert spec["createNamespace"] is True and spec["timeoutSeconds"] == 300
    assert "plainHTTP" not in spec


def test_deployment_becomes_a_manifest_like_clusternet_shadow_api() -> None:
    objects = _load("scheduling-group/nginx-deployment.yaml")
    deploy = _one(objects, Manifest, "deployments.qux.my-nginx")
    assert deploy.namespace == known.RESERVED_NAMESPACE == "clusternet-reserved"
    assert deploy.labels == {
        "clusternet-app": "multi-cluster-nginx",
        "apps.clusternet.io/config.group": "apps",
        "apps.clusternet.io/config.version": "v1",
        "apps.clusternet.io/config.kind": "Deployment",
        "apps.clusternet.io/config.name": "my-nginx",
        "apps.clusternet.io/config.namespace": "qux",
    }
    assert deploy.template["spec"]["replicas"] == 6
    assert deploy.template["metadata"] == {
        "name": "my-nginx",
        "namespace": "qux",
        "labels": {"clusternet-app": "multi-cluster-nginx"},
    }

    namespace = _one(objects, Manifest, "namespaces.qux")
    assert namespace.labels["apps.clusternet.io/config.group"] == ""
    assert "apps.clusternet.io/config.namespace" not in namespace.labels


def test_crd_instances_become_manifests() -> None:
    objects = _load("scheduling-with-nfd/day0/node-feature-rule.yaml")
    rule = _one(objects, Manifest, "nodefeaturerules.label-aggregate-rule")
    assert rule.labels["apps.clusternet.io/config.group"] == "nfd.k8s-sigs.io"
    assert "apps.clusternet.io/config.namespace" not in rule.labels
    assert "namespace" not in rule.template["metadata"]
    assert rule.template["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"] == {"AVX512F": {"op": "Exists"}}

    objects = _load("scheduling-with-mcs-api/scheduling/service-export.yaml")
    export = _one(objects, Manifest, "serviceexports.baz.nginx-svc")
    assert export.labels["apps.clusternet.io/subs.namespace"] == "default"  # original labels are kept
    assert export.labels["apps.clusternet.io/config.kind"] == "ServiceExport"


def test_every_feed_in_the_corpus_finds_its_manifest() -> None:
    """What the scheduler and deployer do: look a Subscription's feeds up by `domain.feeds`."""
    for directory in ("replication-scheduling", "scheduling-group", "scheduling-with-mcs-api/scheduling"):
        objects = _load(directory)
        manifests = [o for o in objects if isinstance(o, Manifest)]
        for sub in (o for o in objects if isinstance(o, Subscription)):
            for feed in sub.spec.feeds:
                if feed.api_version.startswith("apps.clusternet.io/"):
                    continue
                wanted = feed_selector(feed)
                matches = [m for m in manifests if wanted in manifest_selectors(m)]
                assert len(matches) == 1, (directory, format_feed(feed))

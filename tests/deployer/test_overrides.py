"""Overrides as Clusternet applies them: the compat examples, each type, order and failures."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import (
    Globalization,
    HelmChart,
    Localization,
    Manifest,
    OverrideConfig,
    OverrideType,
    Subscription,
)
from clusternet_nats.api.loader import load_path, parse_object
from clusternet_nats.api.meta import Feed, KubeObject
from clusternet_nats.deployer.descriptions import Target, render_generic, render_helm
from clusternet_nats.deployer.overrides import OverrideError, SourcedOverride, apply_overrides
from clusternet_nats.testing import compat

CLUSTER_NS = "clusternet-5l82l"  # the namespace the compat Localizations are written for
NGINX = Feed(api_version="apps/v1", kind="Deployment", namespace="foo", name="my-nginx")


def _examples(folder: str) -> dict[str, KubeObject]:
    return {f"{obj.kind}/{obj.name}": obj for obj in load_path(compat.compat_path(compat.EXAMPLES, folder))}


def _of(objects: dict[str, KubeObject], model: type[Any]) -> list[Any]:
    return [obj for obj in objects.values() if isinstance(obj, model)]


def _target(objects: dict[str, KubeObject], cluster_name: str, namespace: str = CLUSTER_NS) -> Target:
    return Target(
        namespace=namespace,
        labels={known.CLUSTER_NAME: cluster_name},
        subscription=_of(objects, Subscription)[0],
        globalizations=_of(objects, Globalization),
        localizations=_of(objects, Localization),
    )


def _render_one(manifest: Manifest, feed: Feed, target: Target) -> dict[str, Any]:
    spec = render_generic([(feed, manifest)], target)
    assert spec.raw is not None
    result: dict[str, Any] = json.loads(spec.raw[0])
    return result


def _override(type_: OverrideType, value: str, **fields: Any) -> SourcedOverride:
    source = Localization.new("loc", CLUSTER_NS, spec={"feed": NGINX.to_json_dict()})
    return SourcedOverride(source, OverrideConfig(name="under-test", type=type_, value=value, **fields))


def test_replication_example_applies_globalization_then_localizations_by_priority() -> None:
    objects = _examples("replication-scheduling")
    manifest = objects["Manifest/deployments.foo.my-nginx"]
    assert isinstance(manifest, Manifest)

    rendered = _render_one(manifest, NGINX, _target(objects, "area1-cluster"))

    assert rendered["metadata"]["labels"] == {
        "clusternet-app": "multi-cluster-nginx",
        "some-label": "some-value",  # Globalization, whose second patch removed another-label
        "deployed-in-cluster": "clusternet-5l82l",  # lower-priority Localization
    }
    assert rendered["metadata"]["annotations"] == {"foo": "bar"}
    assert rendered["spec"]["replicas"] == 3  # priority 600 beats 300's 1
    assert rendered["spec"]["template"]["spec"]["containers"] == [
        {"name": "nginx-container", "image": "nginx:1.14.0-alpine", "ports": [{"containerPort": 80}]},
        {"name": "redis-container", "image": "redis:6.2.5"},
    ]


def test_globalization_affinity_and_localization_namespace_select_the_cluster() -> None:
    objects = _examples("replication-scheduling")
    manifest = objects["Manifest/deployments.foo.my-nginx"]
    assert isinstance(manifest, Manifest)

    elsewhere = _render_one(manifest, NGINX, _target(objects, "area9-cluster", namespace="clusternet-other"))

    assert elsewhere == {key: value for key, value in manifest.template.items() if key != "status"}


def test_helm_example_merges_values_and_patches_the_chart_but_not_its_identity() -> None:
    objects = _examples("replication-scheduling")
    chart = objects["HelmChart/mysql"]
    assert isinstance(chart, HelmChart)
    renaming = Localization.new(
        "rename-chart",
        CLUSTER_NS,
        spec={
            "priority": 900,
            "feed": {
                "apiVersion": "apps.clusternet.io/v1alpha1",
                "kind": "HelmChart",
                "namespace": "default",
                "name": "mysql",
            },
            "overrides": [
                {
                    "name": "rename",
                    "type": "Helm",
                    "overrideChart": True,
                    "value": "spec: {chart: other, targetNamespace: x}",
                }
            ],
        },
    )
    target = _target(objects, "area1-cluster")
    target = replace(target, localizations=[*target.localizations, renaming])

    spec = render_helm([chart], target)

    assert spec.charts is not None and spec.chart_raw is not None and spec.raw is not None
    assert [(ref.namespace, ref.name) for ref in spec.charts] == [("default", "mysql")]
    rendered = json.loads(spec.chart_raw[0])
    assert rendered["spec"] == {
        "repo": "https://charts.bitnami.com/bitnami",
        "chart": "mysql",
        "version": "9.1.8",  # the Localization's, applied after the Globalization's 9.1.0
        "targetNamespace": "abc",
        "createNamespace": True,
        "timeoutSeconds": 300,
    }
    assert rendered["metadata"]["labels"] == {"some-label": "some-value-2", "another-label": "another-value-2"}
    assert json.loads(spec.raw[0]) == {
        "commonLabels": {"clusternet.io/override-by": "clusternet-hub", "some-label": "some-value"},
        "primary": {"persistence": {"enabled": False}},
        "image": {"tag": "8.0.26-debian-10-r39"},
        "auth": {"database": "database_for_clusternet-5l82l"},
    }


def test_fieldpatch_example_merges_into_the_json_text_of_a_field() -> None:
    objects = _examples("fieldpatch")
    manifest = objects["Manifest/configmaps.qux.server-conf"]
    assert isinstance(manifest, Manifest)
    feed = Feed(api_version="v1", kind="ConfigMap", namespace="qux", name="server-conf")

    rendered = _render_one(manifest, feed, _target(objects, "us-west"))
    untouched = _render_one(manifest, feed, _target(objects, "us-east"))

    assert rendered["data"]["server.conf"] == (
        "{\n"
        '    "db_address": "local:3306",\n'
        '    "metric": {\n'
        '        "exporter_bind_ip": "::",\n'
        '        "exporter_bind_port": 29402,\n'
        '        "exporter_thread_num": 8\n'
        "    },\n"
        '    "region_id": "us-west-1",\n'
        '    "server": {\n'
        '        "bind_ip": "::",\n'
        '        "bind_port": 8080,\n'
        '        "bind_port_v1": 8081,\n'
        '        "tls_ca_file": "/data/ca.crt",\n'
        '        "tls_cert_file": "/data/server.crt",\n'
        '        "tls_key_file": "/data/server.key",\n'
        '        "tls_passwd_file": "/data/encrypt.key"\n'
        "    },\n"
        '    "zone_id": "zone-1"\n'
        "}"
    )
    assert untouched["data"] == manifest.template["data"]


def test_field_json_patch_in_yaml_format() -> None:
    doc = {"data": {"app.yaml": "server:\n  port: 80\nname: demo\n"}}
    patch = '[{"op": "replace", "path": "/server/port", "value": 8080}, {"op": "add", "path": "/debug", "value": true}]'
    override = _override(OverrideType.FIELD_JSON_PATCH, patch, field_path="/data/app.yaml", field_format="YAML")

    result, _ = apply_overrides([override], generic=doc)

    assert result["data"]["app.yaml"] == "debug: true\nname: demo\nserver:\n  port: 8080\n"
    assert doc["data"]["app.yaml"] == "server:\n  port: 80\nname: demo\n"  # the input is not mutated


def test_timestamps_in_values_and_fields_stay_strings() -> None:
    """A YAML field keeps a date a string (re-quoted, so it reads back the same); a value's date
    lands as the text written, and the result is still JSON."""
    doc = {"data": {"app.yaml": "released: 2024-01-02\nreplicas: 1\n", "when": "2023-12-31"}}
    overrides = [
        _override(OverrideType.FIELD_MERGE_PATCH, "replicas: 2", field_path="/data/app.yaml", field_format="YAML"),
        _override(OverrideType.MERGE_PATCH, "data:\n  when: 2024-01-02T10:00:00Z\n"),
    ]

    result, _ = apply_overrides(overrides, generic=doc)

    assert result["data"] == {"app.yaml": "released: '2024-01-02'\nreplicas: 2\n", "when": "2024-01-02T10:00:00Z"}
    assert json.loads(json.dumps(result)) == result


def test_merge_patch_in_yaml_removes_with_null() -> None:
    doc = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"ports": [1, 2]}}
    value = "metadata:\n  labels:\n    a: null\n    c: '3'\nspec:\n  ports: [9]\n"

    result, _ = apply_overrides([_override(OverrideType.MERGE_PATCH, value)], generic=doc)

    assert result == {"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"ports": [9]}}


def test_json_patch_to_a_missing_path_leaves_the_object_unchanged_as_clusternet() -> None:
    doc = {"spec": {"replicas": 1}}
    patch = '[{"op": "replace", "path": "/spec/replicas", "value": 2}, {"op": "remove", "path": "/metadata/x"}]'

    result, _ = apply_overrides([_override(OverrideType.JSON_PATCH, patch)], generic=doc)

    assert result == {"spec": {"replicas": 1}}


def test_later_override_of_higher_priority_wins_whatever_the_listing_order() -> None:
    def loc(name: str, priority: int, replicas: int) -> Localization:
        patch = json.dumps([{"op": "replace", "path": "/spec/replicas", "value": replicas}])
        return Localization.new(
            name,
            CLUSTER_NS,
            spec={
                "priority": priority,
                "feed": NGINX.to_json_dict(),
                "overrides": [{"type": "JSONPatch", "value": patch}],
            },
        )

    glob = Globalization.new(
        "everywhere",
        spec={
            "priority": 1000,
            "feed": NGINX.to_json_dict(),
            "overrides": [{"type": "MergePatch", "value": "{spec: {replicas: 7}}"}],
        },
    )
    manifest = parse_object(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "my-nginx", "namespace": "foo"},
            "spec": {"replicas": 1},
        }
    )
    assert isinstance(manifest, Manifest)
    sub = Subscription.new("s", spec={"subscribers": [], "feeds": [NGINX.to_json_dict()]})
    target = Target(
        namespace=CLUSTER_NS,
        labels={},
        subscription=sub,
        globalizations=[glob],
        localizations=[loc("high", 800, 8), loc("low", 100, 1)],
    )

    assert _render_one(manifest, NGINX, target)["spec"]["replicas"] == 8
    divided = replace(target, replicas={"apps/v1/Deployment/foo/my-nginx": 4})
    assert _render_one(manifest, NGINX, divided)["spec"]["replicas"] == 4  # the scheduler's share comes last


@pytest.mark.parametrize(
    ("type_", "value", "fields", "detail"),
    [
        (OverrideType.JSON_PATCH, '{"op": "add"}', {}, "must be a list of operations"),
        (OverrideType.JSON_PATCH, '[{"op": "add", "path": "spec", "value": 1}]', {}, "is not a JSON pointer"),
        (OverrideType.JSON_PATCH, '[{"op": "test", "path": "/spec/replicas", "value": 5}]', {}, "invalid JSON patch"),
        (OverrideType.MERGE_PATCH, "a: [b", {}, "neither JSON nor YAML"),
        (OverrideType.FIELD_MERGE_PATCH, "{}", {"field_path": "/data/nope", "field_format": "JSON"}, "field not found"),
        (OverrideType.FIELD_MERGE_PATCH, "{}", {"field_path": "/spec", "field_format": "JSON"}, "not a string"),
        (OverrideType.FIELD_MERGE_PATCH, "{}", {"field_path": "/data/conf", "field_format": "JSON"}, "not valid JSON"),
    ],
)
def test_a_bad_override_is_an_error_naming_it(
    type_: OverrideType, value: str, fields: dict[str, Any], detail: str
) -> None:
    doc = {"spec": {"replicas": 1}, "data": {"conf": "not json"}}
    override = _override(type_, value, **fields)

    with pytest.raises(OverrideError) as caught:
        apply_overrides([override], generic=doc)

    message = str(caught.value)
    assert "'under-test'" in message
    assert f"Localization {CLUSTER_NS}/loc" in message
    assert detail in message
    if "field_path" in fields:
        assert f"fieldPath {fields['field_path']}" in message


def test_a_divided_jobs_share_goes_to_its_parallelism() -> None:
    """The share is written at the feed's replicaJsonPath: a Job has no spec.replicas."""
    job_feed = Feed(api_version="batch/v1", kind="Job", namespace="foo", name="crunch")
    manifest = parse_object(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "crunch", "namespace": "foo"},
            "spec": {"parallelism": 6, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        }
    )
    assert isinstance(manifest, Manifest)
    sub = Subscription.new("s", spec={"subscribers": [], "feeds": [job_feed.to_json_dict()]})
    target = Target(namespace=CLUSTER_NS, labels={}, subscription=sub, replicas={"batch/v1/Job/foo/crunch": 2})

    rendered = _render_one(manifest, job_feed, target)
    assert rendered["spec"]["parallelism"] == 2
    assert "replicas" not in rendered["spec"]

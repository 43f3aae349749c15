"""Clusternet's own unit-test tables for overrides, ported: our overrides must give its answers.

Ported from clusternet/clusternet `pkg/controllermanager/deployer/localizer/patch_test.go` (the code
under test is `patch.go` beside it), every case of four tests, with the Go case names as test ids:

* TestApplyOverrides, 6 cases ("Helm", "Helm with Empty Original", "HelmChart default
  overrideConfig", "JSONPatch and MergePatch", and two cases both named "FieldPatch": the second
  is "FieldPatch#01", as Go's own subtest runner names a repeated name) -> `apply_overrides`.
  Like the Go test, documents are compared as data (Go decodes both sides before DeepEqual); an
  empty document (Go's empty bytes) is our None.
* TestApplyJSONPatch, 3 cases -> `json_patch`. Go compares the compact bytes its applyJSONPatch
  writes; we compare the data (how a Description's JSON is spelled is descriptions.py's concern).
* TestApplyFieldPatch, 7 cases (4 results, 3 errors) -> `apply_overrides` with one FieldJSONPatch
  or FieldMergePatch override (we have no public applyFieldJSONPatch/applyFieldMergePatch). The
  patched field's text is compared exactly, as Go compares it: it is what lands in the cluster.
* TestFindField, 5 cases (3 found, 2 errors) -> `apply_overrides` (we have no public findField):
  a FieldJSONPatch whose `test` operation checks the value found at fieldPath and then replaces
  it, so the field rewritten at exactly that path proves where the lookup went and what it found.

Every Go case is ported. Errors: Go's tables only say that an error happens; ours must also name
the override, its source and the fieldPath, and say what is wrong, which is asserted here.

Where we differ on purpose: none of these tables. "HelmChart default overrideConfig" runs
Clusternet's defaultChartOverrideConfigs (spelled out below as data) through `apply_overrides`; our
deployer applies the same rule as `descriptions.CHART_IDENTITY_FIELDS`, tested in test_overrides.py.

The ports found two disagreements, both fixed in overrides.py: "JSONPatch and MergePatch" wants
Clusternet's defaultOverrideConfigs (drop metadata.managedFields, metadata.uid and status after
every other override), which our apply_overrides lacked; and a fieldPath that finds nothing must be
a clear error (ours echoed the whole document, field contents included, and named Python types).
The last section tests those two changes beyond the Go tables.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from clusternet_nats.api.apps import FieldFormat, Localization, OverrideConfig, OverrideType
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.yamljson import load_yaml
from clusternet_nats.deployer.overrides import OverrideError, SourcedOverride, apply_overrides, json_patch

CLUSTER_NS = "clusternet-5l82l"
FEED = Feed(api_version="v1", kind="ConfigMap", namespace="default", name="example-configmap")
SOURCE = Localization.new("loc", CLUSTER_NS, spec={"feed": FEED.to_json_dict()})

HELM = OverrideType.HELM
JSON_PATCH = OverrideType.JSON_PATCH
MERGE_PATCH = OverrideType.MERGE_PATCH
FIELD_JSON_PATCH = OverrideType.FIELD_JSON_PATCH
FIELD_MERGE_PATCH = OverrideType.FIELD_MERGE_PATCH


def _config(name: str, type_: OverrideType, value: str, **fields: Any) -> OverrideConfig:
    return OverrideConfig(name=name, type=type_, value=value, **fields)


def _sourced(configs: list[OverrideConfig]) -> list[SourcedOverride]:
    return [SourcedOverride(SOURCE, config) for config in configs]


# ---------------------------------------------------------------------------------------------
# TestApplyOverrides

NAMESPACE_YAML = "\nmetadata:\n    namespace: test2\n"
REMOVE_LABEL_YAML = "\nmetadata:\n  labels:\n    key: null\n"
HELM_DATA_YAML = "\naddress:\n  planet: Earth\n  street: 234 Spouter Inn Ct.\nhole: black\n"

CERT_MANAGER_CHART = {
    "apiVersion": "apps.clusternet.io/v1alpha1",
    "kind": "HelmChart",
    "metadata": {
        "labels": {"apps.clusternet.io/config.group": "apps.clusternet.io"},
        "name": "cert-manager",
        "namespace": "clusternet-system",
    },
    "spec": {
        "chart": "cert-manager",
        "repo": "https://charts.bitnami.com/bitnami",
        "targetNamespace": "kube-system",
        "version": "0.5.8",
    },
}
ISHMAEL = {
    "kind": "Guess",
    "address": {"city": "Nantucket", "street": "123 Spouter Inn Ct."},
    "boat": "pequod",
    "details": {"friends": ["Tashtego"]},
    "name": "Ishmael",
}
ISHMAEL_OVERRIDDEN = {
    "kind": "Guess",
    "address": {
        "city": "Nantucket",
        "country": "US",
        "planet": "Earth",
        "state": "MA",
        "street": "234 Spouter Inn Ct.",
    },
    "boat": "fighter",
    "details": {"friends": ["Tashtego"]},
    "hole": "black",
    "name": "Ishmael",
}
CHART_OVERRIDES_SPEC = {
    "chart": "my-cert-manager",
    "repo": "https://clusternet.github.io/charts",
    "targetNamespace": "kube-public",
    "version": "0.6.1",
}
# Clusternet's defaultChartOverrideConfigs (localizer.go): a chart's name and target namespace
# cannot be overridden.
DEFAULT_CHART_OVERRIDES = [
    _config("skip-overriding-chart-name", JSON_PATCH, '[{"path":"/spec/chart","op":"remove"}]'),
    _config("skip-overriding-targetNamespace", JSON_PATCH, '[{"path":"/spec/targetNamespace","op":"remove"}]'),
]

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "pod",
        "labels": {"app": "nginx"},
        "uid": "1234-678",
        "managedFields": [
            {
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "apiVersion": "apps.clusternet.io/v1alpha1",
                "time": "2022-07-12T09:18:34Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {
                        "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}
                    },
                    "f:spec": {".": {}, "f:chart": {}, "f:repo": {}, "f:targetNamespace": {}, "f:version": {}},
                },
            },
            {
                "manager": "clusternet-hub",
                "operation": "Update",
                "apiVersion": "apps.clusternet.io/v1alpha1",
                "time": "2022-07-12T09:24:39Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {".": {}, "f:phase": {}}},
                "subresource": "status",
            },
        ],
    },
    "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]},
    "status": {"a": "b", "some-value": [{"key1": "value1", "key2": "value2"}]},
}


def _config_map(server_conf: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "example-configmap", "namespace": "default"},
        "data": {"server.conf": server_conf},
    }


APPLY_OVERRIDES_CASES = [
    pytest.param(
        ISHMAEL,
        CERT_MANAGER_CHART,
        [
            _config("empty override", HELM, ""),
            _config(
                "add/update value - json format", HELM, '{"address":{"country":"US","state":"MA"},"boat":"fighter"}'
            ),
            _config("empty override with whitespaces", HELM, "   "),
            _config("add/update value - yaml format", HELM, HELM_DATA_YAML),
            _config(
                "add label and annotation",
                HELM,
                '{"metadata":{"labels":{"foo":"bar"},"annotations":{"foo":"bar"}}}',
                override_chart=True,
            ),
            _config(
                "update chart repo and target namespace",
                HELM,
                '{"spec":{"repo":"https://clusternet.github.io/charts","targetNamespace":"kube-public"}}',
                override_chart=True,
            ),
            _config(
                "update chart name and version",
                HELM,
                '{"spec":{"version":"0.6.1","chart":"my-cert-manager"}}',
                override_chart=True,
            ),
        ],
        ISHMAEL_OVERRIDDEN,
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "HelmChart",
            "metadata": {
                "annotations": {"foo": "bar"},
                "labels": {"apps.clusternet.io/config.group": "apps.clusternet.io", "foo": "bar"},
                "name": "cert-manager",
                "namespace": "clusternet-system",
            },
            "spec": CHART_OVERRIDES_SPEC,
        },
        id="Helm",
    ),
    pytest.param(
        None,
        None,
        [
            _config("empty override", HELM, "  "),
            _config("initial override", HELM, json.dumps(ISHMAEL)),
            _config(
                "add/update value - json format", HELM, '{"address":{"country":"US","state":"MA"},"boat":"fighter"}'
            ),
            _config("empty override with whitespaces", HELM, "   "),
            _config("add/update value - yaml format", HELM, HELM_DATA_YAML),
            _config("empty override with whitespaces for chart spec", HELM, "  ", override_chart=True),
            _config(
                "add label and annotation",
                HELM,
                '{"kind": "HelmChart","metadata":{"labels":{"foo":"bar"},"annotations":{"foo":"bar"}}}',
                override_chart=True,
            ),
            _config(
                "update chart repo and target namespace",
                HELM,
                '{"spec":{"repo":"https://clusternet.github.io/charts", "targetNamespace":"kube-public"}}',
                override_chart=True,
            ),
            _config(
                "update chart name and version",
                HELM,
                '{"spec":{"version":"0.6.1","chart":"my-cert-manager"}}',
                override_chart=True,
            ),
        ],
        ISHMAEL_OVERRIDDEN,
        {
            "kind": "HelmChart",
            "metadata": {"annotations": {"foo": "bar"}, "labels": {"foo": "bar"}},
            "spec": CHART_OVERRIDES_SPEC,
        },
        id="Helm with Empty Original",
    ),
    pytest.param(
        CERT_MANAGER_CHART,
        None,
        DEFAULT_CHART_OVERRIDES,
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "HelmChart",
            "metadata": {
                "labels": {"apps.clusternet.io/config.group": "apps.clusternet.io"},
                "name": "cert-manager",
                "namespace": "clusternet-system",
            },
            "spec": {"repo": "https://charts.bitnami.com/bitnami", "version": "0.5.8"},
        },
        None,
        id="HelmChart default overrideConfig",
    ),
    pytest.param(
        POD,
        None,
        [
            _config("empty override with whitespaces", MERGE_PATCH, "   "),
            _config("add namespace - json format", MERGE_PATCH, '{"metadata":{"namespace":"test"}}'),
            _config("empty override with whitespaces", JSON_PATCH, "   "),
            _config("add namespace - yaml format", MERGE_PATCH, NAMESPACE_YAML),
            _config(
                "replace container image - 1",
                JSON_PATCH,
                '[{"op": "replace", "path": "/spec/containers/0/image", "value":"nginx:1.21.1"}]',
            ),
            _config(
                "add and update labels - json format",
                MERGE_PATCH,
                '{"metadata":{"labels":{"foo":"bar","xyz":"def","key":"value"}}}',
            ),
            _config("remove labels - json format", MERGE_PATCH, '{"metadata":{"labels":{"xyz":null}}}'),
            _config("remove labels - yaml format", MERGE_PATCH, REMOVE_LABEL_YAML),
            _config(
                "replace container image - 2",
                JSON_PATCH,
                '[{"op":"replace","path":"/spec/containers/0/image","value":"nginx:1.20.1"}]',
            ),
            _config(
                "inject new container - json format",
                JSON_PATCH,
                '[{"op":"add","path": "/spec/containers/1",'
                '"value":{"name":"injected-container","image":"redis:6.2.5"}}]',
            ),
        ],
        {
            # uid, managedFields and status are gone: Clusternet's defaultOverrideConfigs, which
            # its applyOverrides always applies last.
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pod", "namespace": "test2", "labels": {"app": "nginx", "foo": "bar"}},
            "spec": {
                "containers": [
                    {"name": "nginx", "image": "nginx:1.20.1"},
                    {"name": "injected-container", "image": "redis:6.2.5"},
                ]
            },
        },
        None,
        id="JSONPatch and MergePatch",
    ),
    pytest.param(
        _config_map(
            '{\n    "db_address": "127.0.0.1:3306",\n    "region_id": "us-west-1",\n    "zone_id": "zone-1"\n}'
        ),
        None,
        [
            _config("empty override with whitespaces", MERGE_PATCH, "   "),
            _config(
                "overridge db address - json format",
                FIELD_JSON_PATCH,
                '[{"op":"replace","path": "/db_address","value":"localhost:3306"}]',
                field_path="/data/server.conf",
                field_format=FieldFormat.JSON,
            ),
        ],
        _config_map(
            '{\n    "db_address": "localhost:3306",\n    "region_id": "us-west-1",\n    "zone_id": "zone-1"\n}'
        ),
        None,
        id="FieldPatch",
    ),
    pytest.param(
        _config_map("db_address: 127.0.0.1:5432\nregion_id: us-west-1\nzone_id: zone-1\n"),
        None,
        [
            _config("empty override with whitespaces", MERGE_PATCH, "   "),
            _config(
                "overridge db address - json format",
                FIELD_MERGE_PATCH,
                "region_id: us-west-2\nzone_id: zone-2\n",
                field_path="/data/server.conf",
                field_format=FieldFormat.YAML,
            ),
        ],
        _config_map("db_address: 127.0.0.1:5432\nregion_id: us-west-2\nzone_id: zone-2\n"),
        None,
        id="FieldPatch#01",
    ),
]


@pytest.mark.parametrize(("original", "original_chart", "overrides", "want", "want_chart"), APPLY_OVERRIDES_CASES)
def test_apply_overrides(
    original: Any, original_chart: Any, overrides: list[OverrideConfig], want: Any, want_chart: Any
) -> None:
    frozen = json.dumps([original, original_chart], sort_keys=True)

    got, got_chart = apply_overrides(_sourced(overrides), generic=original, chart=original_chart)

    assert got == want
    assert got_chart == want_chart
    assert json.dumps([original, original_chart], sort_keys=True) == frozen  # the inputs are not mutated


# ---------------------------------------------------------------------------------------------
# TestApplyJSONPatch

CHART_PATCH_TARGET = {
    "metadata": {"labels": {"another-label": "another-value", "some-label": "some-value"}},
    "spec": {"version": "1.8.0"},
}


@pytest.mark.parametrize(
    ("config", "want"),
    [
        pytest.param(DEFAULT_CHART_OVERRIDES[0], CHART_PATCH_TARGET, id="remove nonexistent key (/spec/chart)"),
        pytest.param(
            DEFAULT_CHART_OVERRIDES[1], CHART_PATCH_TARGET, id="remove nonexistent key (/spec/targetNamespace)"
        ),
        pytest.param(
            _config("remove version", JSON_PATCH, '[{"path":"/spec/version","op":"remove"}]'),
            {**CHART_PATCH_TARGET, "spec": {}},
            id="remove key (/spec/version)",
        ),
    ],
)
def test_apply_json_patch(config: OverrideConfig, want: dict[str, Any]) -> None:
    (override,) = _sourced([config])

    assert json_patch(override, CHART_PATCH_TARGET, json.loads(config.value)) == want


# ---------------------------------------------------------------------------------------------
# TestApplyFieldPatch

LABELS = {"labels": {"another-label": "another-value", "some-label": "some-value"}}
MYSQL_JSON = '{"mysql":{"address":"127.0.0.1:3306"}}'
MYSQL_YAML = "mysql:\n  address: 127.0.0.1:3306\n"
TIMEOUT_JSON_PATCH = '[{"path":"/mysql/timeout","op":"add","value": 5}]'
TIMEOUT_MERGE_PATCH = '{"mysql":{"timeout":5}}'
MYSQL_JSON_WITH_TIMEOUT = '{\n    "mysql": {\n        "address": "127.0.0.1:3306",\n        "timeout": 5\n    }\n}'
MYSQL_YAML_WITH_TIMEOUT = "mysql:\n  address: 127.0.0.1:3306\n  timeout: 5\n"


def _field_override(type_: OverrideType, value: str, path: str, field_format: FieldFormat) -> SourcedOverride:
    (override,) = _sourced([_config("under-test", type_, value, field_path=path, field_format=field_format)])
    return override


@pytest.mark.parametrize(
    ("type_", "value", "field_format", "mydata", "want"),
    [
        pytest.param(
            FIELD_JSON_PATCH,
            TIMEOUT_JSON_PATCH,
            FieldFormat.JSON,
            MYSQL_JSON,
            MYSQL_JSON_WITH_TIMEOUT,
            id="json patch add mysql timeout to configmap in json",
        ),
        pytest.param(
            FIELD_MERGE_PATCH,
            TIMEOUT_MERGE_PATCH,
            FieldFormat.JSON,
            MYSQL_JSON,
            MYSQL_JSON_WITH_TIMEOUT,
            id="merge patch mysql timeout to configmap in json",
        ),
        pytest.param(
            FIELD_MERGE_PATCH,
            TIMEOUT_MERGE_PATCH,
            FieldFormat.YAML,
            MYSQL_YAML,
            MYSQL_YAML_WITH_TIMEOUT,
            id="merge patch add mysql timeout to configmap in yaml",
        ),
        pytest.param(
            FIELD_JSON_PATCH,
            TIMEOUT_JSON_PATCH,
            FieldFormat.YAML,
            MYSQL_YAML,
            MYSQL_YAML_WITH_TIMEOUT,
            id="json patch add mysql timeout to configmap in yaml",
        ),
    ],
)
def test_apply_field_patch(type_: OverrideType, value: str, field_format: FieldFormat, mydata: str, want: str) -> None:
    override = _field_override(type_, value, "/mydata", field_format)

    got, _ = apply_overrides([override], generic={"metadata": LABELS, "mydata": mydata})

    assert got == {"metadata": LABELS, "mydata": want}
    assert got["mydata"] == want  # the text itself, byte for byte, as Go compares it


@pytest.mark.parametrize(
    ("path", "field_format", "mydata", "details"),
    [
        pytest.param(
            "/field-not-exist",
            FieldFormat.YAML,
            MYSQL_YAML,
            ["field not found", "no member 'field-not-exist' in the object at /"],
            id="add mysql timeout to configmap in yaml when field not exist",
        ),
        pytest.param(
            "/mydata",
            FieldFormat.YAML,
            "mysql:  address: 127.0.0.1:3306\n",
            ["field is not valid YAML", "line 1"],
            id="invalid yaml field value",
        ),
        pytest.param(
            "/mydata",
            FieldFormat.JSON,
            '{"mysql""""":{"address":"127.0.0.1:3306"}}',
            ["field is not valid JSON", "line 1"],
            id="invalid json field value",
        ),
    ],
)
def test_apply_field_patch_errors(path: str, field_format: FieldFormat, mydata: str, details: list[str]) -> None:
    override = _field_override(FIELD_MERGE_PATCH, TIMEOUT_MERGE_PATCH, path, field_format)

    with pytest.raises(OverrideError) as caught:
        apply_overrides([override], generic={"metadata": LABELS, "mydata": mydata})

    message = str(caught.value)
    assert message.startswith(
        f"override 'under-test' (FieldMergePatch, fieldPath {path}) of Localization {CLUSTER_NS}/loc: "
    )
    for detail in details:
        assert detail in message
    assert "127.0.0.1" not in message  # a field's content (a ConfigMap's, maybe a secret) is not echoed


# ---------------------------------------------------------------------------------------------
# TestFindField

FIND_FIELD_DOC = {"metadata": LABELS, "spec": {"version": "1.8.0"}}
FIND_FIELD_LIST_DOC = {"metadata": LABELS, "spec": {"commands": ["sleep", "999999"], "version": "1.8.0"}}
FIND_FIELD_CONTAINERS_DOC = {
    "metadata": LABELS,
    "spec": {"containers": [{"image": "nginx:latest"}, {"image": "redis:latest"}], "version": "1.8.0"},
}


def _check_and_mark(found: str) -> str:
    """A JSON patch of the YAML document in the field: `test` that the whole of it is what reading
    `found` as YAML gives, then replace it with a mapping naming `found`."""
    checked = load_yaml(found)
    return json.dumps(
        [{"op": "test", "path": "", "value": checked}, {"op": "replace", "path": "", "value": {"found": found}}]
    )


@pytest.mark.parametrize(
    ("doc", "path", "found", "marked"),
    [
        pytest.param(
            FIND_FIELD_DOC,
            "/metadata/labels/another-label",
            "another-value",
            {"metadata": {"labels": {**LABELS["labels"], "another-label": "found: another-value\n"}}},
            id="find metadata.labels.another-label",
        ),
        pytest.param(
            FIND_FIELD_LIST_DOC,
            "/spec/commands/1",
            "999999",
            {"spec": {"commands": ["sleep", "found: '999999'\n"], "version": "1.8.0"}},
            id="find some field in string array",
        ),
        pytest.param(
            FIND_FIELD_CONTAINERS_DOC,
            "/spec/containers/1/image",
            "redis:latest",
            {
                "spec": {
                    "containers": [{"image": "nginx:latest"}, {"image": "found: redis:latest\n"}],
                    "version": "1.8.0",
                }
            },
            id="find some field in object array",
        ),
    ],
)
def test_find_field(doc: dict[str, Any], path: str, found: str, marked: dict[str, Any]) -> None:
    override = _field_override(FIELD_JSON_PATCH, _check_and_mark(found), path, FieldFormat.YAML)

    got, _ = apply_overrides([override], generic=doc)

    assert got == {**doc, **marked}


@pytest.mark.parametrize(
    ("doc", "path", "detail"),
    [
        pytest.param(FIND_FIELD_DOC, "/metadata/labels", "field is an object, not a string", id="find metadata.labels"),
        pytest.param(
            FIND_FIELD_CONTAINERS_DOC,
            "/spec/containers/error/image",
            "field not found: 'error' is not an index of the array at /spec/containers",
            id="error field path",
        ),
    ],
)
def test_find_field_errors(doc: dict[str, Any], path: str, detail: str) -> None:
    override = _field_override(FIELD_MERGE_PATCH, "{}", path, FieldFormat.JSON)

    with pytest.raises(OverrideError) as caught:
        apply_overrides([override], generic=doc)

    assert str(caught.value) == (
        f"override 'under-test' (FieldMergePatch, fieldPath {path}) of Localization {CLUSTER_NS}/loc: {detail}"
    )


# ---------------------------------------------------------------------------------------------
# Beyond the tables: the rest of what the ports above made us change.


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        pytest.param("/spec/containers/2/image", "index 2 is past the end of the array at /spec/containers (2 items)"),
        pytest.param("/spec/version/major", "a string at /spec/version has no member 'major'"),
        pytest.param("/spec/containers/-", "'-' is not an index of the array at /spec/containers"),
    ],
)
def test_find_field_names_where_the_walk_stopped(path: str, detail: str) -> None:
    override = _field_override(FIELD_MERGE_PATCH, "{}", path, FieldFormat.JSON)

    with pytest.raises(OverrideError) as caught:
        apply_overrides([override], generic=FIND_FIELD_CONTAINERS_DOC)

    prefix = f"override 'under-test' (FieldMergePatch, fieldPath {path}) of Localization {CLUSTER_NS}/loc: "
    assert str(caught.value) == f"{prefix}field not found: {detail}"


def test_ignored_fields_go_last_whoever_wrote_them() -> None:
    """Clusternet's defaultOverrideConfigs run after the user's overrides: what an override adds
    to status, uid or managedFields is dropped too; Helm values lose a top-level status likewise."""
    added = _config("add status", MERGE_PATCH, "{status: {phase: Running}, metadata: {uid: x, labels: {a: b}}}")
    helm = _config("values", HELM, "{status: shown, replicaCount: 2}")

    got, _ = apply_overrides(_sourced([added]), generic={"kind": "Pod", "metadata": {"name": "p"}})
    values, _ = apply_overrides(_sourced([helm]))

    assert got == {"kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}}
    assert values == {"replicaCount": 2}

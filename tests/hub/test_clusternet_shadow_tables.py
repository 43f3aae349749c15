"""Clusternet's own unit-test tables for its shadow API, run against ours (test ids are the Go case names).

Ported from github.com/clusternet/clusternet (Apache-2.0), inputs and expected outputs as data:

- pkg/hub/registry/shadow/template/trimmer_test.go (trimmer.go):
  TestTrimCoreService, 3 cases ("ServiceType NodePort", "Headless Service", "Service HealthCheckNodePort");
  TestTrimBatchJob, 1 case ("trim batch job").
  Pure: `domain.trimming.trim_common_metadata` then `trim_core_service` / `trim_batch_job`, as the Go tests
  call them. Over HTTP: each raw object PUT at its Kubernetes path is stored as the Go table's
  expected object less its status (the shadow API's `trim` also drops status, as Clusternet's
  trimResult does), and read back with the Manifest's stamps.
- pkg/hub/registry/shadow/template/transformer_test.go (transformer.go):
  TestTransformManifest, 1 case (unnamed; Go's `t.Run("")` names it "#00").
  Pure: `shadow.template` of the Go table's Manifest, JSON-encoded as Go encodes it (keys sorted,
  no spaces), equals the expected string exactly. Over HTTP: the same Manifest written at its own
  path and read through the shadow path; the stamps are then the hub's (generation 1, its uid,
  resourceVersion and creationTimestamp), which the Go case leaves unset.
- pkg/hub/registry/shadow/template/rest_test.go (rest.go):
  TestRESTGenerateNameForManifest, 4 cases. Pure: `shadow.manifest_name`. Also the loader's name
  for the same object (`parse_object`) and, over HTTP, the Manifest an object sent to the shadow
  path is stored as. Our scope of a kind the hub does not know comes from the object (a namespace
  makes it namespaced), so the two cluster-scoped cases are sent there without their namespace.
- pkg/hub/apiserver/shadow/utils_test.go (utils.go):
  TestNormalizeAPIGroupResources, 1 case ("batch"). Pure: `apiversions.normalize_api_group_resources`
  (what `shadow_resources` picks each resource's version with), entries as APIResource JSON fields.

All 10 Go cases are ported. Not ported: the Go-only details around the tables: Clusternet's
fallback to legacy hyphenated Manifest names (`generateLegacyNameForManifest`, for Manifests made
before its 2021 rename; the hub never made such names) and the `known.*` constants, used here by
their values.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp
import pytest
from clusternet_nats.api import Manifest, parse_object
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH
from clusternet_nats.domain.trimming import trim_batch_job, trim_common_metadata, trim_core_service
from clusternet_nats.hub.apiversions import normalize_api_group_resources
from clusternet_nats.hub.shadow import manifest_name, template

from .objects import APPS

CREATED_BY = {"clusternet.io/created-by": "clusternet-hub"}
SERVER_STAMPS = {"creationTimestamp": "2021-11-01T08:12:43Z", "resourceVersion": "4457294", "selfLink": "test-link"}
"""What kube-apiserver set on the Go tables' raw Services, and trimmed from them."""
SERVICE_UID = "28f5ae38-9eea-431c-918b-68ffdf263c24"
MANIFEST_STAMPS = ("generation", "creationTimestamp", "resourceVersion", "uid")
"""What a shadow read takes from the Manifest (transformManifest), whatever the template says."""


def _ports(node_ports: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    ports: list[dict[str, Any]] = [
        {"name": "tcp-80-80", "port": 80, "protocol": "TCP", "targetPort": 80},
        {"name": "tcp-443-443", "port": 443, "protocol": "TCP", "targetPort": 443},
    ]
    if node_ports:
        for port, node_port in zip(ports, node_ports, strict=True):
            port["nodePort"] = node_port
    return ports


def _service(name: str, spec: dict[str, Any], stamps: dict[str, str]) -> dict[str, Any]:
    metadata = {"labels": CREATED_BY, "name": name, "namespace": "nginx-test", "uid": SERVICE_UID, **stamps}
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec, "status": {}}


_COMMON_SPEC = {"ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None"}

TRIM_CORE_SERVICE = [
    pytest.param(
        _service(
            "my-test-nodeport-svc",
            {
                **_COMMON_SPEC,
                "clusterIP": "10.98.177.115",
                "clusterIPs": ["10.98.177.115"],
                "externalTrafficPolicy": "Cluster",
                "ports": _ports((30597, 30598)),
                "type": "NodePort",
            },
            SERVER_STAMPS,
        ),
        _service(
            "my-test-nodeport-svc",
            {**_COMMON_SPEC, "externalTrafficPolicy": "Cluster", "ports": _ports(), "type": "NodePort"},
            {},
        ),
        id="ServiceType NodePort",
    ),
    pytest.param(
        _service(
            "my-test-nodeport-svc",
            {
                **_COMMON_SPEC,
                "clusterIP": "None",
                "externalTrafficPolicy": "Cluster",
                "ports": _ports(),
                "type": "ClusterIP",
            },
            SERVER_STAMPS,
        ),
        _service(
            "my-test-nodeport-svc",
            {
                **_COMMON_SPEC,
                "clusterIP": "None",
                "externalTrafficPolicy": "Cluster",
                "ports": _ports(),
                "type": "ClusterIP",
            },
            {},
        ),
        id="Headless Service",
    ),
    pytest.param(
        _service(
            "my-test-healthchecknodeport-svc",
            {
                **_COMMON_SPEC,
                "clusterIP": "None",
                "externalTrafficPolicy": "Local",
                "healthCheckNodePort": 32770,
                "ports": _ports(),
                "type": "LoadBalancer",
            },
            SERVER_STAMPS,
        ),
        _service(
            "my-test-healthchecknodeport-svc",
            {
                **_COMMON_SPEC,
                "clusterIP": "None",
                "externalTrafficPolicy": "Local",
                "ports": _ports(),
                "type": "LoadBalancer",
            },
            {},
        ),
        id="Service HealthCheckNodePort",
    ),
]

_JOB_UID = "a2d92553-a472-4ab5-bf4b-81b654f3db39"
_PI_POD_SPEC = {
    "containers": [
        {
            "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
            "image": "perl",
            "imagePullPolicy": "Always",
            "name": "pi",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
    ],
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Never",
    "schedulerName": "default-scheduler",
    "terminationGracePeriodSeconds": 30,
}


def _job(metadata: dict[str, Any], match_labels: dict[str, str], pod_metadata: dict[str, Any]) -> dict[str, Any]:
    job_metadata = {"generation": 1, "labels": CREATED_BY, "name": "pi", "namespace": "default", **metadata}
    spec = {
        "backoffLimit": 4,
        "completions": 1,
        "parallelism": 1,
        "selector": {"matchLabels": match_labels},
        "template": {"metadata": pod_metadata, "spec": _PI_POD_SPEC},
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_metadata, "spec": spec, "status": {}}


TRIM_BATCH_JOB = [
    pytest.param(
        _job(
            {
                "creationTimestamp": "2021-11-01T07:01:18Z",
                "resourceVersion": "4450181",
                "uid": "dc8ca8aa-268c-4634-b1f7-6bf67e3af6cb",
            },
            {"controller-uid": _JOB_UID, "batch.kubernetes.io/controller-uid": _JOB_UID},
            {
                "creationTimestamp": None,
                "labels": {
                    "controller-uid": _JOB_UID,
                    "job-name": "pi",
                    "batch.kubernetes.io/controller-uid": _JOB_UID,
                    "batch.kubernetes.io/job-name": "pi",
                },
            },
        ),
        _job({"uid": "dc8ca8aa-268c-4634-b1f7-6bf67e3af6cb"}, {}, {"labels": {"job-name": "pi"}}),
        id="trim batch job",
    ),
]


@pytest.mark.parametrize(("raw", "desired"), TRIM_CORE_SERVICE)
def test_trim_core_service(raw: dict[str, Any], desired: dict[str, Any]) -> None:
    result = copy.deepcopy(raw)
    trim_common_metadata(result)
    trim_core_service(result)
    assert result == desired


@pytest.mark.parametrize(("raw", "desired"), TRIM_BATCH_JOB)
def test_trim_batch_job(raw: dict[str, Any], desired: dict[str, Any]) -> None:
    result = copy.deepcopy(raw)
    trim_common_metadata(result)
    trim_batch_job(result)
    assert result == desired


def _in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    moved = copy.deepcopy(obj)
    moved["metadata"]["namespace"] = namespace
    return moved


def _resource_path(obj: dict[str, Any]) -> str:
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    base = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    return f"{base}/namespaces/{namespace}/{obj['kind'].lower()}s/{name}"


@pytest.mark.parametrize(("raw", "desired"), [*TRIM_CORE_SERVICE, *TRIM_BATCH_JOB])
async def test_shadow_writes_store_trimmed_objects(
    http: aiohttp.ClientSession, unique_ns: str, raw: dict[str, Any], desired: dict[str, Any]
) -> None:
    """Through the hub: what the Go tables expect is what the Manifest holds (and status goes too,
    as Clusternet's trimResult trims it after these), whatever path the object is written at."""
    raw, desired = _in_namespace(raw, unique_ns), _in_namespace(desired, unique_ns)
    stored = {k: v for k, v in desired.items() if k != "status"}
    kind, name = raw["kind"].lower() + "s", raw["metadata"]["name"]
    manifest_path = f"{APPS}/namespaces/clusternet-reserved/manifests/{kind}.{unique_ns}.{name}"
    shadow_path = f"/apis/shadow/v1alpha1/namespaces/{unique_ns}/{kind}/{name}"
    for method, path in (("PUT", _resource_path(raw)), ("PUT", shadow_path), ("PUT", SHADOW_OBJECTS_PATH)):
        async with http.request(method, path, json=raw) as resp:
            assert resp.status in (200, 201), await resp.text()
        async with http.get(manifest_path) as resp:
            assert resp.status == 200, await resp.text()
            manifest = await resp.json()
        assert manifest["template"] == stored, path
        async with http.get(shadow_path) as resp:
            assert resp.status == 200, await resp.text()
            read = await resp.json()
        stamps = {key: read["metadata"].pop(key) for key in MANIFEST_STAMPS}
        assert stamps == {key: manifest["metadata"][key] for key in MANIFEST_STAMPS}
        assert read == {**stored, "metadata": {k: v for k, v in stored["metadata"].items() if k not in stamps}}


TRANSFORM_MANIFEST = [
    pytest.param(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Manifest",
            "metadata": {
                "generation": 6,
                "labels": {
                    "apps.clusternet.io/config.group": "foo",
                    "apps.clusternet.io/config.version": "v1alpha1",
                    "apps.clusternet.io/config.kind": "Bar",
                    "apps.clusternet.io/config.name": "boo",
                    "apps.clusternet.io/config.namespace": "ns1",
                },
                "finalizers": ["apps.clusternet.io/finalizer"],
                "namespace": "clusternet-reserved",
                "name": "bars-boo",
                "resourceVersion": "1860247",
                "uid": "13ff776c-1e91-4a84-b77d-6c35f3a52fed",
            },
            "template": {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "labels": {
                        "clusternet.io/created-by": "clusternet-hub",
                        "key": "valxyz",
                        "kubernetes.io/metadata.name": "abc",
                    },
                    "name": "abc",
                    "uid": "01b17d4e-18cf-441d-8ee6-1c484b4afbe2",
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            },
        },
        '{"apiVersion":"v1","kind":"Namespace","metadata":{"generation":6,"labels":{"clusternet.io/created-by":'
        '"clusternet-hub","key":"valxyz","kubernetes.io/metadata.name":"abc"},"name":"abc","resourceVersion":'
        '"1860247","uid":"13ff776c-1e91-4a84-b77d-6c35f3a52fed"},"spec":{"finalizers":["kubernetes"]},'
        '"status":{"phase":"Active"}}',
        id="#00",
    ),
]


@pytest.mark.parametrize(("manifest", "wanted"), TRANSFORM_MANIFEST)
def test_transform_manifest(manifest: dict[str, Any], wanted: str) -> None:
    got = template(Manifest.model_validate(manifest))
    assert json.dumps(got, sort_keys=True, separators=(",", ":")) == wanted


@pytest.mark.parametrize(("manifest", "wanted"), TRANSFORM_MANIFEST)
async def test_transform_manifest_through_the_shadow_path(
    http: aiohttp.ClientSession, unique_ns: str, manifest: dict[str, Any], wanted: str
) -> None:
    """The Go case's Manifest written at its own path (named as the hub names it, in a namespace of
    its own) reads back through the shadow path with the stamps the hub gave it."""
    body = copy.deepcopy(manifest)
    labels = body["metadata"]["labels"]
    labels["apps.clusternet.io/config.namespace"] = unique_ns
    body["metadata"] = {"name": f"bars.{unique_ns}.boo", "namespace": "clusternet-reserved", "labels": labels}
    async with http.post(f"{APPS}/namespaces/clusternet-reserved/manifests", json=body) as resp:
        assert resp.status == 201, await resp.text()
        created = (await resp.json())["metadata"]
    async with http.get(f"/apis/shadow/v1alpha1/namespaces/{unique_ns}/bars/boo") as resp:
        assert resp.status == 200, await resp.text()
        read = await resp.json()
    expected = json.loads(wanted)
    expected["metadata"].update({key: created[key] for key in MANIFEST_STAMPS})
    assert created["generation"] == 1
    assert read == expected


GENERATE_NAME_FOR_MANIFEST = [
    pytest.param(
        "foos", "kube-system", True, "abc", "foos.kube-system.abc", id="namespace-scoped resources foos (standard)"
    ),
    pytest.param(
        "foos",
        "kube-system",
        True,
        "abc.def-bar",
        "foos.kube-system.abc.def-bar",
        id="namespace-scoped resources foos (name with '.' & '-')",
    ),
    pytest.param("bars", "kube-system", False, "abc", "bars.abc", id="cluster-scoped resources bars (standard)"),
    pytest.param(
        "bars",
        "kube-system",
        False,
        "abc.def-bar",
        "bars.abc.def-bar",
        id="cluster-scoped resources bars (name with '.' & '-')",
    ),
]


@pytest.mark.parametrize(("resource", "namespace", "namespaced", "name", "want"), GENERATE_NAME_FOR_MANIFEST)
def test_generate_name_for_manifest(resource: str, namespace: str, namespaced: bool, name: str, want: str) -> None:
    assert manifest_name(resource, namespace, name, namespaced) == want


def _custom_object(resource: str, namespace: str, namespaced: bool, name: str) -> dict[str, Any]:
    """An object of the resource's kind (foos: Foo); a cluster-scoped one has no namespace, which
    is how the hub tells the scope of a kind it does not know."""
    metadata = {"name": name, "namespace": namespace} if namespaced else {"name": name}
    return {"apiVersion": "example.io/v1", "kind": resource[:-1].capitalize(), "metadata": metadata}


@pytest.mark.parametrize(("resource", "namespace", "namespaced", "name", "want"), GENERATE_NAME_FOR_MANIFEST)
def test_loader_names_manifests_alike(resource: str, namespace: str, namespaced: bool, name: str, want: str) -> None:
    assert parse_object(_custom_object(resource, namespace, namespaced, name)).name == want


@pytest.mark.parametrize(("resource", "namespace", "namespaced", "name", "want"), GENERATE_NAME_FOR_MANIFEST)
async def test_shadow_path_stores_the_named_manifest(
    http: aiohttp.ClientSession, unique_ns: str, resource: str, namespace: str, namespaced: bool, name: str, want: str
) -> None:
    """Sent to the shadow path (in a namespace of the test's own, and a resource of its own for the
    cluster-scoped cases, so modules sharing the hub do not meet), stored as the named Manifest."""
    plural = resource if namespaced else f"{resource[:-1]}{unique_ns.replace('-', '')}s"
    obj = _custom_object(plural, unique_ns, namespaced, name)
    want = want.replace(namespace, unique_ns) if namespaced else want.replace(resource, plural, 1)
    scope = f"/namespaces/{unique_ns}" if namespaced else ""
    path = f"/apis/shadow/v1alpha1{scope}/{plural}/{name}"
    async with http.put(SHADOW_OBJECTS_PATH, json=obj) as resp:
        assert resp.status == 201, await resp.text()
    async with http.get(f"{APPS}/namespaces/clusternet-reserved/manifests/{want}") as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(path) as resp:
        assert resp.status == 200, await resp.text()
        assert (await resp.json())["metadata"]["name"] == name


def _resource(name: str, kind: str, verbs: list[str], **fields: Any) -> dict[str, Any]:
    """An APIResource as discovery's JSON has it; None where Go's is nil."""
    entry: dict[str, Any] = {"name": name, "singularName": "", "namespaced": True, "group": "", "version": ""}
    entry |= {"kind": kind, "verbs": verbs, "shortNames": None, "categories": ["all"], "storageVersionHash": ""}
    return entry | fields


def _in(group: str, version: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "group": group, "version": version}


_STATUS = {"categories": None}
NORMALIZE_API_GROUP_RESOURCES = [
    pytest.param(
        "batch",
        "v1",
        {
            "v2alpha1": [_resource("xyz", "Xyz", ["foo", "bar", "far"])],
            "v1": [
                _resource("xyz", "Xyz", ["foo", "bar"]),
                _resource("jobs", "Job", ["foo", "bar"], storageVersionHash="mudhfqk/qZY="),
                _resource("jobs/status", "Job", ["foo", "bar"], **_STATUS),
            ],
            "v1beta1": [
                _resource("cronjobs", "CronJob", ["foo", "bar"], shortNames=["cj"], storageVersionHash="h/JlFAZkyyY="),
                _resource("cronjobs/status", "CronJob", ["foo", "bar"], **_STATUS),
                _resource("scenarios", "Scenario", ["foo", "bar", "far"], shortNames=["sc"]),
            ],
            "v1alpha1": [_resource("scenarios", "Scenario", ["foo", "bar"], shortNames=["sc"])],
        },
        [
            _in("batch", "v1", _resource("jobs", "Job", ["foo", "bar"], storageVersionHash="mudhfqk/qZY=")),
            _in("batch", "v1", _resource("jobs/status", "Job", ["foo", "bar"], **_STATUS)),
            _in("batch", "v1", _resource("xyz", "Xyz", ["foo", "bar"])),
            _in(
                "batch",
                "v1beta1",
                _resource("cronjobs", "CronJob", ["foo", "bar"], shortNames=["cj"], storageVersionHash="h/JlFAZkyyY="),
            ),
            _in("batch", "v1beta1", _resource("cronjobs/status", "CronJob", ["foo", "bar"], **_STATUS)),
            _in("batch", "v1beta1", _resource("scenarios", "Scenario", ["foo", "bar", "far"], shortNames=["sc"])),
        ],
        id="batch",
    ),
]


@pytest.mark.parametrize(("group", "preferred", "versioned", "want"), NORMALIZE_API_GROUP_RESOURCES)
def test_normalize_api_group_resources(
    group: str, preferred: str, versioned: dict[str, list[dict[str, Any]]], want: list[dict[str, Any]]
) -> None:
    assert normalize_api_group_resources(group, preferred, versioned) == want

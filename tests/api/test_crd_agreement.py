"""Our models and Clusternet's CRDs must give the same verdict on the same object.

The CRD side is validated the way a kube-apiserver would: defaults from the schema applied
first, unknown fields rejected (kubectl's strict field validation), `byte` and `date-time`
formats checked. Where we knowingly differ, the difference is listed in KNOWN_DIVERGENCES with
its reason, and the test asserts it still exists so the list cannot silently rot.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import jsonschema
import pytest
import yaml
from clusternet_nats.api import registry
from clusternet_nats.api.loader import ObjectError, load_path, parse_object
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.testing import compat
from pydantic import BaseModel

CRD_DIR = compat.compat_path(compat.CRDS)
EXAMPLES = compat.compat_path(compat.EXAMPLES)


def _load_crds() -> dict[str, dict[str, Any]]:
    crds = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        crds[crd["spec"]["names"]["kind"]] = crd
    return crds


CRDS = _load_crds()
KINDS = sorted(CRDS)


def crd_schema(kind: str) -> dict[str, Any]:
    (version,) = CRDS[kind]["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


# ---------------------------------------------------------------------------------------------
# The API server's view of a CRD schema


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Rejects unknown fields wherever the schema lists properties, as strict field validation does."""
    out = copy.deepcopy(schema)

    def walk(node: dict[str, Any]) -> None:
        if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node.setdefault("additionalProperties", False)
        for child in node.get("properties", {}).values():
            walk(child)
        if isinstance(node.get("items"), dict):
            walk(node["items"])
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"])

    walk(out)
    return out


def apply_defaults(schema: dict[str, Any], value: Any) -> None:
    """Structural-schema defaulting, done by the API server before validation."""
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                apply_defaults(sub, value[key])
        if isinstance(schema.get("additionalProperties"), dict):
            for item in value.values():
                apply_defaults(schema["additionalProperties"], item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)


FORMATS = jsonschema.FormatChecker(formats=())


@FORMATS.checks("byte", raises=ValueError)
def _is_byte(value: object) -> bool:
    return not isinstance(value, str) or bool(base64.b64decode(value, validate=True) or True)


@FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    return not isinstance(value, str) or bool(datetime.fromisoformat(value))


VALIDATORS = {
    kind: jsonschema.Draft202012Validator(_strict(crd_schema(kind)), format_checker=FORMATS) for kind in KINDS
}


def crd_errors(obj: dict[str, Any]) -> list[str]:
    data = copy.deepcopy(obj)
    apply_defaults(crd_schema(obj["kind"]), data)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATORS[obj["kind"]].iter_errors(data)]


def model_error(obj: dict[str, Any]) -> str | None:
    try:
        parse_object(copy.deepcopy(obj))
    except ObjectError as err:
        return str(err)
    return None


# ---------------------------------------------------------------------------------------------
# A valid object of every kind, using every field the CRD defines

UUID = "dc91021d-2361-4f6d-a404-7c33b9e01118"
B64 = base64.b64encode(b'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"qux"}}').decode()
SELECTOR = {
    "matchLabels": {"region": "ap-shanghai"},
    "matchExpressions": [
        {"key": "clusters.clusternet.io/cluster-id", "operator": "Exists"},
        {"key": "zone", "operator": "NotIn", "values": ["z1", "z2"]},
    ],
}
TOLERATION = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30}
FEED = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "my-nginx", "namespace": "qux"}
HELM = {
    "repo": "https://charts.bitnami.com/bitnami",
    "chart": "mysql",
    "version": "9.2.0",
    "targetNamespace": "abc",
    "chartPullSecret": {"name": "pull", "namespace": "default"},
    "createNamespace": False,
    "timeoutSeconds": 600,
    "atomic": True,
    "upgradeAtomic": True,
    "wait": True,
    "waitForJob": True,
    "disableHooks": False,
    "force": False,
    "replace": False,
    "plainHTTP": False,
    "replaceCRDs": True,
    "skipCRDs": False,
}
REPLICA_STATUS = {
    "observedGeneration": 3,
    "replicas": 6,
    "updatedReplicas": 6,
    "currentReplicas": 6,
    "readyReplicas": 5,
    "availableReplicas": 5,
    "unavailableReplicas": 1,
    "succeeded": 0,
    "failed": 0,
    "active": 1,
}
OVERRIDES = [
    {"name": "labels", "type": "Helm", "value": "image:\n  tag: v2\n", "overrideChart": True},
    {
        "name": "conf",
        "type": "FieldMergePatch",
        "value": '{"zone_id": "zone-1"}',
        "fieldPath": "/data/server.conf",
        "fieldFormat": "JSON",
        "overrideChart": False,
    },
]


def _obj(kind: str, name: str, namespace: str | None, **body: Any) -> dict[str, Any]:
    info = registry.by_kind(kind)
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": info.api_version, "kind": kind, "metadata": metadata, **body}


FULL: dict[str, dict[str, Any]] = {
    "Subscription": _obj(
        "Subscription",
        "app-demo",
        "default",
        spec={
            "subscribers": [
                {"clusterAffinity": SELECTOR, "weight": 2, "subGroupStrategy": {"minClusters": 1}},
                {"clusterAffinity": {"matchLabels": {"region": "ap-beijing"}}, "weight": 0},
            ],
            "schedulingStrategy": "Dividing",
            "dividingScheduling": {
                "type": "Dynamic",
                "dynamicDividing": {
                    "strategy": "Binpack",
                    "minClusters": 1,
                    "maxClusters": 3,
                    "preferredClusters": [
                        {
                            "weight": 10,
                            "preference": {
                                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                                "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["b"]}],
                            },
                        }
                    ],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": SELECTOR,
                            "minDomains": 2,
                            "nodeAffinityPolicy": "Honor",
                            "nodeTaintsPolicy": "Ignore",
                            "matchLabelKeys": ["app"],
                        }
                    ],
                },
            },
            "schedulingBySubGroup": True,
            "clusterTolerations": [TOLERATION],
            "priority": 100,
            "preemptionPolicy": "PreemptNever",
            "schedulerName": "my-scheduler",
            "feeds": [FEED, {"apiVersion": "v1", "kind": "Namespace", "name": "qux"}],
        },
        status={
            "bindingClusters": ["clusternet-5l82l/clusternet-cluster-abcde"],
            "replicas": {"apps/v1/Deployment/qux/my-nginx": [6], "v1/Namespace/qux": []},
            "specHash": 1234567890123,
            "desiredReleases": 2,
            "completedReleases": 1,
            "aggregatedStatuses": [
                {
                    **FEED,
                    "feedStatusSummary": {"available": True, "replicaStatus": REPLICA_STATUS},
                    "feedStatusDetails": [
                        {
                            "clusterId": UUID,
                            "clusterName": "cluster-a",
                            "available": True,
                            "replicaStatus": REPLICA_STATUS,
                        }
                    ],
                }
            ],
        },
    ),
    "Base": _obj("Base", "base-demo", "clusternet-5l82l", spec={"feeds": [FEED]}),
    "Description": _obj(
        "Description",
        "desc-demo",
        "clusternet-5l82l",
        spec={
            "deployer": "Generic",
            "raw": [B64],
            "chartRaw": [B64],
            "charts": [{"name": "mysql", "namespace": "default"}],
        },
        status={
            "phase": "Success",
            "reason": "",
            "manifestStatuses": [{**FEED, "observedStatus": {"readyReplicas": 6, "conditions": [{"a": 1}]}}],
        },
    ),
    "Manifest": _obj(
        "Manifest",
        "deployments.qux.my-nginx",
        "clusternet-reserved",
        template={"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 6, "x": [None, {}]}},
    ),
    "HelmChart": _obj("HelmChart", "mysql", "default", spec=HELM, status={"phase": "Found", "reason": "chart exists"}),
    "HelmRelease": _obj(
        "HelmRelease",
        "helm-demo-mysql",
        "clusternet-5l82l",
        spec={**HELM, "releaseName": "mysql", "overrides": base64.b64encode(b"image:\n  tag: 8.0\n").decode()},
        status={
            "firstDeployed": "2024-01-01T00:00:00Z",
            "lastDeployed": "2024-01-02T00:00:00Z",
            "description": "Install complete",
            "phase": "deployed",
            "version": 2,
            "notes": "thanks",
        },
    ),
    "Localization": _obj(
        "Localization",
        "loc-demo",
        "clusternet-5l82l",
        spec={"priority": 600, "overridePolicy": "ApplyNow", "feed": FEED, "overrides": OVERRIDES},
    ),
    "Globalization": _obj(
        "Globalization",
        "glob-demo",
        None,
        spec={
            "priority": 0,
            "overridePolicy": "ApplyLater",
            "feed": FEED,
            "overrides": OVERRIDES,
            "clusterAffinity": SELECTOR,
        },
    ),
    "FeedInventory": _obj(
        "FeedInventory",
        "app-demo",
        "default",
        spec={
            "feeds": [
                {
                    **FEED,
                    "desiredReplicas": 6,
                    "replicaJsonPath": "/spec/replicas",
                    "replicaRequirements": {
                        "nodeSelector": {"disk": "ssd"},
                        "tolerations": [TOLERATION],
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}
                                    ]
                                }
                            }
                        },
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "128Mi"},
                            "limits": {"cpu": 1, "memory": "256Mi"},
                            "claims": [{"name": "gpu", "request": "big"}],
                        },
                    },
                }
            ]
        },
    ),
    "ManagedCluster": _obj(
        "ManagedCluster",
        "clusternet-cluster-abcde",
        "clusternet-5l82l",
        spec={
            "clusterId": UUID,
            "clusterType": "EdgeCluster",
            "syncMode": "Dual",
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": "2024-01-01T00:00:00Z"}],
            "clusterInitBaseName": "clusternet-cluster",
        },
        status={
            "lastObservedTime": "2024-01-01T00:00:00Z",
            "k8sVersion": "v1.29.0",
            "agentVersion": "v0.17.0",
            "platform": "linux/amd64",
            "apiserverURL": "https://10.0.0.1:6443",
            "healthz": True,
            "livez": True,
            "readyz": True,
            "appPusher": True,
            "useSocket": False,
            "allocatable": {"cpu": "3800m", "memory": "15Gi", "pods": 110},
            "capacity": {"cpu": 4, "memory": "16Gi", "ephemeral-storage": "1e3"},
            "resourceUsage": {"cpuUsage": "200m", "memoryUsage": "1Gi"},
            "clusterCIDR": "10.244.0.0/16",
            "serviceCIDR": "10.96.0.0/12",
            "nodeStatistics": {"readyNodes": 3, "notReadyNodes": 0, "unknownNodes": 0, "lostNodes": 0},
            "podStatistics": {"runningPods": 20, "totalPods": 22},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": "2024-01-01T00:00:00Z",
                    "reason": "ManagedClusterReady",
                    "message": "cluster is ready",
                    "observedGeneration": 1,
                }
            ],
            "heartbeatFrequencySeconds": 180,
            "kubeQPS": 5.5,
            "kubeBurst": 10,
            "predictorEnabled": True,
            "predictorAddress": "http://predictor:8080",
            "predictorDirectAccess": False,
        },
    ),
    "ClusterRegistrationRequest": _obj(
        "ClusterRegistrationRequest",
        "clusternet-" + UUID,
        None,
        spec={
            "clusterId": UUID,
            "clusterName": "cluster-a",
            "clusterNamespace": "clusternet-5l82l",
            "clusterType": "EdgeCluster",
            "syncMode": "Push",
            "clusterLabels": {"region": "ap-shanghai"},
        },
        status={
            "result": "Approved",
            "errorMessage": "",
            "dedicatedNamespace": "clusternet-5l82l",
            "managedClusterName": "clusternet-cluster-abcde",
            "token": base64.b64encode(b"token").decode(),
            "caCertificate": base64.b64encode(b"-----BEGIN CERTIFICATE-----").decode(),
        },
    ),
}

DELETE = object()
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def mutated(kind: str, path: str, value: Any) -> dict[str, Any]:
    """FULL[kind] with the field at `path` (e.g. `spec.feeds[0].kind`) set to value, or deleted."""
    obj = copy.deepcopy(FULL[kind])
    steps: list[str | int] = [int(i) if i else k for k, i in _STEP.findall(path)]
    node: Any = obj
    for step in steps[:-1]:
        node = node[step]
    if value is DELETE:
        del node[steps[-1]]
    else:
        node[steps[-1]] = value
    return obj


# (kind, path, value): every one must be rejected by the CRD and by our model.
INVALID: list[tuple[str, str, Any]] = [
    ("Subscription", "spec.schedulingStrategy", "Replicate"),
    ("Subscription", "spec.subscribers", DELETE),
    ("Subscription", "spec.feeds", DELETE),
    ("Subscription", "spec.subscribers[0].clusterAffinity", DELETE),
    ("Subscription", "spec.subscribers[0].weight", -1),
    ("Subscription", "spec.subscribers[0].weight", "2"),
    ("Subscription", "spec.subscribers[0].subGroupStrategy.minClusters", -1),
    ("Subscription", "spec.dividingScheduling.type", "Weighted"),
    ("Subscription", "spec.dividingScheduling.dynamicDividing.strategy", "Pack"),
    ("Subscription", "spec.dividingScheduling.dynamicDividing.topologySpreadConstraints[0].maxSkew", DELETE),
    ("Subscription", "spec.dividingScheduling.dynamicDividing.preferredClusters[0].weight", DELETE),
    ("Subscription", "spec.preemptionPolicy", "Never"),
    ("Subscription", "spec.priority", "high"),
    ("Subscription", "spec.schedulingBySubGroup", "yes"),
    ("Subscription", "spec.clusterTolerations[0].tolerationSeconds", "30"),
    ("Subscription", "spec.feeds[0].kind", DELETE),
    ("Subscription", "spec.feeds[1].name", DELETE),
    ("Subscription", "spec.unknownField", 1),
    ("Subscription", "spec", DELETE),
    ("Subscription", "status.replicas", {"apps/v1/Deployment/qux/my-nginx": ["6"]}),
    ("Subscription", "status.replicas", {"apps/v1/Deployment/qux/my-nginx": [1.5]}),
    ("Subscription", "status.specHash", "abc"),
    ("Subscription", "status.aggregatedStatuses[0].feedStatusDetails[0].clusterId", "not-a-uuid"),
    ("Subscription", "status.aggregatedStatuses[0].feedStatusDetails[0].clusterName", "c" * 31),
    ("Subscription", "status.aggregatedStatuses[0].feedStatusSummary.available", "true"),
    ("Base", "spec.feeds", DELETE),
    ("Base", "spec.feeds[0].apiVersion", DELETE),
    ("Description", "spec.deployer", "Kustomize"),
    ("Description", "spec.deployer", DELETE),
    ("Description", "spec.raw", ["%%% not base64 %%%"]),
    ("Description", "spec.chartRaw", [B64[:-3]]),
    ("Description", "spec.charts[0].namespace", DELETE),
    ("Description", "status.phase", "Done"),
    ("Description", "status.manifestStatuses[0].name", DELETE),
    ("Manifest", "template", DELETE),
    ("Manifest", "template", "kind: Deployment"),
    ("HelmChart", "spec.repo", "ftp://charts.example.com"),
    ("HelmChart", "spec.repo", "charts.example.com/stable"),
    ("HelmChart", "spec.repo", "https://charts.example.com/has space"),
    ("HelmChart", "spec.chart", DELETE),
    ("HelmChart", "spec.repo", DELETE),
    ("HelmChart", "spec.targetNamespace", DELETE),
    ("HelmChart", "spec.timeoutSeconds", "300"),
    ("HelmChart", "spec.createNamespace", "true"),
    ("HelmChart", "status.phase", "Missing"),
    ("HelmRelease", "spec.overrides", "not base64!!"),
    ("HelmRelease", "spec.releaseName", 7),
    ("HelmRelease", "status.version", "2"),
    ("Localization", "spec.priority", 1001),
    ("Localization", "spec.priority", -1),
    ("Localization", "spec.overridePolicy", "ApplyAlways"),
    ("Localization", "spec.overrides[0].type", "StrategicMergePatch"),
    ("Localization", "spec.overrides[0].value", DELETE),
    ("Localization", "spec.overrides[1].fieldFormat", "TOML"),
    ("Localization", "spec.clusterAffinity", SELECTOR),
    ("Globalization", "spec.overrides[0].type", DELETE),
    ("Globalization", "spec.feed.apiVersion", DELETE),
    ("Globalization", "spec.priority", 1000.5),
    ("FeedInventory", "spec.feeds[0].desiredReplicas", "3"),
    ("FeedInventory", "spec.feeds[0].replicaRequirements.resources.requests.cpu", "lots"),
    ("FeedInventory", "spec.feeds[0].replicaRequirements.tolerations[0].tolerationSeconds", 1.5),
    ("FeedInventory", "spec.feeds[0].replicaRequirements.resources.claims[0].name", DELETE),
    ("ManagedCluster", "spec.clusterId", "dc91021d"),
    ("ManagedCluster", "spec.clusterId", DELETE),
    ("ManagedCluster", "spec.syncMode", "Both"),
    ("ManagedCluster", "spec.syncMode", DELETE),
    ("ManagedCluster", "spec.taints[0].effect", DELETE),
    ("ManagedCluster", "spec.clusterInitBaseName", "x" * 513),
    ("ManagedCluster", "status.capacity.cpu", "four"),
    ("ManagedCluster", "status.allocatable.memory", 1.5),
    ("ManagedCluster", "status.resourceUsage.cpuUsage", "lots"),
    ("ManagedCluster", "status.conditions[0].status", "Maybe"),
    ("ManagedCluster", "status.conditions[0].reason", "not a reason"),
    ("ManagedCluster", "status.conditions[0].lastTransitionTime", "yesterday"),
    ("ManagedCluster", "status.lastObservedTime", "yesterday"),
    ("ManagedCluster", "status.kubeQPS", "fast"),
    ("ManagedCluster", "status.healthz", "ok"),
    ("ManagedCluster", "status.nodeStatistics.readyNodes", "3"),
    ("ClusterRegistrationRequest", "spec.clusterId", DELETE),
    ("ClusterRegistrationRequest", "spec.clusterId", "cluster-1"),
    ("ClusterRegistrationRequest", "spec.clusterName", "a" * 31),
    ("ClusterRegistrationRequest", "spec.clusterName", "UPPER_CASE"),
    ("ClusterRegistrationRequest", "spec.clusterNamespace", "n" * 64),
    ("ClusterRegistrationRequest", "spec.syncMode", "Sideways"),
    ("ClusterRegistrationRequest", "spec.clusterLabels", {"a": 1}),
    ("ClusterRegistrationRequest", "status.token", "@@@"),
    ("ClusterRegistrationRequest", "status.caCertificate", 12),
]

# (kind, path, value): every one must be accepted by the CRD and by our model.
VALID: list[tuple[str, str, Any]] = [
    ("Subscription", "spec.schedulingStrategy", DELETE),
    ("Subscription", "spec.dividingScheduling.type", DELETE),
    ("Subscription", "spec.dividingScheduling.dynamicDividing.strategy", DELETE),
    ("Subscription", "spec.dividingScheduling.dynamicDividing", DELETE),
    ("Subscription", "spec.preemptionPolicy", DELETE),
    ("Subscription", "spec.schedulerName", DELETE),
    ("Subscription", "spec.subscribers[0].weight", 0),
    ("Subscription", "spec.subscribers[0].subGroupStrategy", {}),
    ("Subscription", "spec.subscribers[0].clusterAffinity", {}),
    ("Subscription", "spec.feeds", []),
    ("Subscription", "spec.priority", -5),
    ("Subscription", "status", DELETE),
    ("Subscription", "status.replicas", {}),
    # CRD patterns are unanchored (regex search): an id embedded in a longer string passes both.
    ("Subscription", "status.aggregatedStatuses[0].feedStatusDetails[0].clusterId", f"x-{UUID}-y"),
    ("Subscription", "status.aggregatedStatuses[0].feedStatusDetails[0].clusterName", "UPPER-but-a1"),
    ("Base", "spec.feeds[0].namespace", DELETE),
    ("Description", "spec.raw", []),
    ("Description", "status.manifestStatuses[0].observedStatus", {}),
    ("Manifest", "template", {}),
    ("HelmChart", "spec.repo", "oci://myoci.registry.com:5000/helm-charts"),
    ("HelmChart", "spec.repo", "http://10.0.0.1:8080/charts?x=1&y=%20"),
    ("HelmChart", "spec.createNamespace", DELETE),
    ("HelmChart", "spec.timeoutSeconds", DELETE),
    ("HelmChart", "status", DELETE),
    ("HelmRelease", "spec.overrides", ""),
    ("Localization", "spec.priority", 0),
    ("Localization", "spec.priority", 1000),
    ("Localization", "spec.priority", DELETE),
    ("Localization", "spec.overridePolicy", DELETE),
    ("Localization", "spec.feed", DELETE),
    ("Localization", "spec.overrides[0].name", DELETE),
    ("Globalization", "spec.clusterAffinity", DELETE),
    ("Globalization", "spec", {}),
    ("FeedInventory", "spec.feeds[0].replicaRequirements", {}),
    ("FeedInventory", "spec.feeds[0].replicaRequirements.resources.limits", {"cpu": "+1.5e3", "memory": ".5Gi"}),
    ("ManagedCluster", "status.capacity", {"cpu": 0, "memory": "-1", "x": "100n"}),
    ("ManagedCluster", "status.kubeQPS", 5),
    ("ManagedCluster", "status.resourceUsage.cpuUsage", 200),
    ("ManagedCluster", "spec.taints", []),
    ("ClusterRegistrationRequest", "spec.clusterName", "a" * 30),
    ("ClusterRegistrationRequest", "spec.syncMode", DELETE),
    ("ClusterRegistrationRequest", "status", {}),
]

# Where we knowingly reject what the CRD schema accepts.
KNOWN_DIVERGENCES: list[tuple[str, str, Any, str]] = [
    (
        "ManagedCluster",
        "spec",
        DELETE,
        "spec is optional in the CRD (Go zero value), but a ManagedCluster without a clusterId and "
        "syncMode is meaningless; requiring it keeps `cluster.spec.cluster_id` non-optional",
    ),
    ("ClusterRegistrationRequest", "spec", DELETE, "same as ManagedCluster: clusterId is the whole point"),
    (
        "Subscription",
        "spec.subscribers[0].clusterAffinity.matchExpressions[0].operator",
        "Contains",
        "the CRD leaves label-selector operators free-form; Clusternet only fails later, when parsing "
        "the selector; we reject at the door",
    ),
    (
        "Globalization",
        "spec.clusterAffinity.matchExpressions",
        [{"key": "zone", "operator": "In"}],
        "same for In/NotIn without values",
    ),
]


@pytest.mark.parametrize("kind", KINDS)
def test_full_object_is_valid_in_both(kind: str) -> None:
    assert crd_errors(FULL[kind]) == []
    assert model_error(FULL[kind]) is None


def _schema_paths(schema: dict[str, Any], prefix: str) -> Iterator[str]:
    for key, sub in schema.get("properties", {}).items():
        here = f"{prefix}.{key}"
        yield here
        if key == "metadata" or here in FREE_FORM:
            continue
        yield from _schema_paths(sub.get("items", sub), here + "[]" if "items" in sub else here)


def _value_paths(value: Any, prefix: str) -> Iterator[str]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield f"{prefix}.{key}"
            yield from _value_paths(child, f"{prefix}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _value_paths(item, prefix + "[]")


@pytest.mark.parametrize("kind", KINDS)
def test_full_object_uses_every_crd_field(kind: str) -> None:
    """So the INVALID/VALID tables exercise the whole schema, not a corner of it."""
    missing = set(_schema_paths(crd_schema(kind), kind)) - set(_value_paths(FULL[kind], kind))
    assert sorted(missing) == []


def _case_id(case: tuple[Any, ...]) -> str:
    value = "DELETE" if case[2] is DELETE else repr(case[2])[:20]
    return f"{case[0]}:{case[1]}={value}"


@pytest.mark.parametrize("case", INVALID, ids=_case_id)
def test_invalid_rejected_by_both(case: tuple[str, str, Any]) -> None:
    obj = mutated(*case)
    assert crd_errors(obj), "the CRD accepts it"
    assert model_error(obj) is not None, "our model accepts it"


@pytest.mark.parametrize("case", VALID, ids=_case_id)
def test_valid_variant_accepted_by_both(case: tuple[str, str, Any]) -> None:
    obj = mutated(*case)
    assert crd_errors(obj) == []
    assert model_error(obj) is None


@pytest.mark.parametrize("case", KNOWN_DIVERGENCES, ids=_case_id)
def test_known_divergences_still_diverge(case: tuple[str, str, Any, str]) -> None:
    obj = mutated(*case[:3])
    assert crd_errors(obj) == []
    assert model_error(obj) is not None


def test_tables_are_big_enough() -> None:
    assert len(INVALID) >= 25
    assert {case[0] for case in INVALID} == set(KINDS)
    assert {case[0] for case in VALID} == set(KINDS)


def _examples() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return [doc for doc in docs if doc["apiVersion"].split("/")[0].endswith("clusternet.io")]


@pytest.mark.parametrize("doc", _examples(), ids=lambda d: f"{d['kind']}:{d['metadata']['name']}")
def test_examples_valid_in_both(doc: dict[str, Any]) -> None:
    assert crd_errors(doc) == []
    assert model_error(doc) is None


def test_serialized_objects_are_valid_crd_objects() -> None:
    """What we write is what Clusternet would accept: our JSON names, our defaults, no nulls."""
    objects = [parse_object(copy.deepcopy(obj)) for obj in FULL.values()] + load_path(EXAMPLES)
    for obj in objects:
        assert crd_errors(obj.to_json_dict()) == [], obj.namespaced_name()
        assert type(obj).model_validate(obj.to_json_dict()) == obj
        assert type(obj).model_validate_json(obj.to_json()) == obj


# ---------------------------------------------------------------------------------------------
# Structure: the same property names, types, enums, patterns, bounds and defaults


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        node = {**root["$defs"][node["$ref"].rsplit("/", 1)[-1]], **siblings}
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    if "anyOf" in node and len(branches) == 1:
        return {**{k: v for k, v in node.items() if k != "anyOf"}, **_resolve(branches[0], root)}
    return node


def _types(node: dict[str, Any]) -> set[str]:
    if "type" in node:
        return {node["type"]}
    return {branch["type"] for branch in node.get("anyOf", [])}


# Places where our schema is deliberately looser or stricter than the CRD's.
FREE_FORM = {"FeedInventory.spec.feeds[].replicaRequirements.affinity"}
EXTRA_ENUMS = {
    "Subscription.spec.subscribers[].clusterAffinity.matchExpressions[].operator",
    "Subscription.spec.dividingScheduling.dynamicDividing.topologySpreadConstraints[].labelSelector"
    ".matchExpressions[].operator",
    "Globalization.spec.clusterAffinity.matchExpressions[].operator",
}
EXTRA_REQUIRED = {"ManagedCluster": {"spec"}, "ClusterRegistrationRequest": {"spec"}}
# Optional fields we add where Clusternet says nothing (why a Subscription is not fully placed).
EXTRA_FIELDS = {
    "Subscription.status": {"conditions", "unscheduledReplicas", "predictedReplicas", "drainingClusters"},
    "FeedInventory.spec.feeds[].replicaRequirements": {"priorityClassName"},
}
INT_FORMATS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _compare(ours: dict[str, Any], crd: dict[str, Any], root: dict[str, Any], path: str) -> Iterator[str]:
    ours = _resolve(ours, root)
    if path in FREE_FORM or path.endswith(".metadata"):
        return
    if _types(ours) != _types(crd) and not (crd.get("type") == "integer" and _types(ours) == {"integer"}):
        yield f"{path}: type {_types(ours)} != {_types(crd)}"
    enum = set(_resolve(ours, root).get("enum", []))
    if enum != set(crd.get("enum", [])) and not (path in EXTRA_ENUMS and "enum" not in crd):
        yield f"{path}: enum {enum} != {crd.get('enum')}"
    for key in ("pattern", "maxLength", "default"):
        if ours.get(key) != crd.get(key):
            yield f"{path}: {key} {ours.get(key)!r} != {crd.get(key)!r}"
    low, high = INT_FORMATS.get(crd.get("format", ""), (None, None))
    if ours.get("minimum") != crd.get("minimum", low) or ours.get("maximum") != crd.get("maximum", high):
        yield f"{path}: bounds {ours.get('minimum')}..{ours.get('maximum')} != CRD {crd}"
    if crd.get("x-kubernetes-preserve-unknown-fields"):
        if ours.get("type") != "object" or ours.get("properties"):
            yield f"{path}: should be a free-form object"
        return
    if "properties" in crd:
        mine = {k: v for k, v in ours.get("properties", {}).items() if k not in EXTRA_FIELDS.get(path, ())}
        if set(mine) != set(crd["properties"]):
            yield f"{path}: fields {sorted(set(mine) ^ set(crd['properties']))} differ"
        # A field the CRD both requires and defaults is optional to a user (defaulting runs first).
        crd_required = {k for k in crd.get("required", []) if "default" not in crd["properties"][k]}
        # apiVersion and kind are required of every object by the API server itself.
        extra = EXTRA_REQUIRED.get(path, set()) | ({"apiVersion", "kind"} if "." not in path else set())
        if set(ours.get("required", [])) != crd_required | extra:
            yield f"{path}: required {sorted(ours.get('required', []))} != {sorted(crd_required | extra)}"
        for key in set(mine) & set(crd["properties"]):
            yield from _compare(mine[key], crd["properties"][key], root, f"{path}.{key}")
    if isinstance(crd.get("items"), dict):
        yield from _compare(ours.get("items", {}), crd["items"], root, path + "[]")
    if isinstance(crd.get("additionalProperties"), dict):
        yield from _compare(ours.get("additionalProperties", {}), crd["additionalProperties"], root, path + "{}")


@pytest.mark.parametrize("kind", KINDS)
def test_model_schema_matches_crd_structure(kind: str) -> None:
    ours = registry.by_kind(kind).model.model_json_schema(by_alias=True, mode="validation")
    assert list(_compare(ours, crd_schema(kind), ours, kind)) == []


# ---------------------------------------------------------------------------------------------
# Defaults, names and scope


def _crd_defaults(schema: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if "default" in schema:
        yield path, schema["default"]
    for key, sub in schema.get("properties", {}).items():
        yield from _crd_defaults(sub, (*path, key))
    if isinstance(schema.get("items"), dict):
        yield from _crd_defaults(schema["items"], path)


def _model_field_default(model: type[BaseModel], path: tuple[str, ...]) -> Any:
    """Walks model fields by JSON name, through Optional/list wrappers, to the last field's default."""
    for i, name in enumerate(path):
        field = next(f for key, f in model.model_fields.items() if (f.alias or key) == name)
        if i == len(path) - 1:
            default = field.get_default(call_default_factory=True)
            return getattr(default, "value", default)
        candidates: list[Any] = [field.annotation]
        while candidates:
            annotation = candidates.pop()
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                model = annotation
                break
            candidates.extend(getattr(annotation, "__args__", ()))
    raise AssertionError(path)


def test_model_defaults_equal_crd_defaults() -> None:
    found = 0
    for kind in KINDS:
        model = registry.by_kind(kind).model
        for path, default in _crd_defaults(crd_schema(kind)):
            assert _model_field_default(model, path) == default, (kind, path)
            found += 1
    # Subscription 5, Localization/Globalization 2 each, HelmChart/HelmRelease 2 each, CRR 1.
    assert found == 14


@pytest.mark.parametrize("kind", KINDS)
def test_names_scope_and_status_match_crd(kind: str) -> None:
    crd = CRDS[kind]
    names = crd["spec"]["names"]
    (version,) = crd["spec"]["versions"]
    info = registry.by_kind(kind)
    model: type[KubeObject] = info.model
    assert (info.group, info.version) == (crd["spec"]["group"], version["name"])
    assert info.plural == model.PLURAL == names["plural"] == info.bucket
    assert info.singular == names["singular"]
    assert info.short_names == model.SHORT_NAMES == tuple(names.get("shortNames", ()))
    assert info.namespaced == model.NAMESPACED == (crd["spec"]["scope"] == "Namespaced")
    has_status = "status" in (version.get("subresources") or {})
    assert has_status == model.HAS_STATUS
    assert info.status_bucket == (f"{info.plural}-status" if has_status else None)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("subs", "Subscription"),
        ("sub", "Subscription"),
        ("SUBSCRIPTION", "Subscription"),
        ("subscriptions", "Subscription"),
        ("mcls", "ManagedCluster"),
        ("managedcluster", "ManagedCluster"),
        ("desc", "Description"),
        ("clsrr", "ClusterRegistrationRequest"),
        ("loc", "Localization"),
        ("local", "Localization"),
        ("glob", "Globalization"),
        ("global", "Globalization"),
        ("chart", "HelmChart"),
        ("charts", "HelmChart"),
        ("HelmChart", "HelmChart"),
        ("hr", "HelmRelease"),
        ("finv", "FeedInventory"),
        ("manifests", "Manifest"),
        ("base", "Base"),
    ],
)
def test_resolve_accepts_every_name(name: str, kind: str) -> None:
    assert registry.resolve(name).kind == kind


def test_resolve_unknown_lists_valid_names() -> None:
    with pytest.raises(registry.UnknownKindError) as caught:
        registry.resolve("subscriptoins")
    assert "subscriptoins" in str(caught.value)
    assert "subs" in str(caught.value) and "clsrr" in str(caught.value)
    with pytest.raises(registry.UnknownKindError):
        registry.by_kind("Deployment")


def test_registry_lists_the_eleven_kinds() -> None:
    assert [info.kind for info in registry.all_kinds()] == [
        "Subscription",
        "Base",
        "Description",
        "Manifest",
        "HelmChart",
        "HelmRelease",
        "Localization",
        "Globalization",
        "FeedInventory",
        "ManagedCluster",
        "ClusterRegistrationRequest",
    ]
    assert sorted(info.kind for info in registry.all_kinds()) == KINDS

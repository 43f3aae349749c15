"""User YAML/JSON in, typed objects out, with errors a person can act on.

Text is read by api/yamljson.py (Kubernetes' rules: timestamps stay strings; its limits).

Clusternet's own kinds become their models. Every other Kubernetes object (Deployment,
Namespace, a CRD instance...) becomes a Manifest, exactly as Clusternet's shadow API stores it,
so a Subscription's feeds find it by the same name and labels they would on a Clusternet hub.

Errors: each problem is an ``ObjectError`` that names the file, the document, the object and
the field (dotted JSON path, e.g. ``spec.subscribers[0].weight``). When one load finds several
problems (several invalid fields, or several bad documents) it raises an ``ObjectErrors``: an
``ObjectError`` itself (carrying the first problem's attributes) whose ``errors`` lists them all,
so ``except ObjectError`` catches every failure and nothing is reported only halfway.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import APPS_GROUP, Manifest
from clusternet_nats.api.clusters import CLUSTERS_GROUP
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.registry import KindInfo, all_kinds
from clusternet_nats.api.yamljson import DecodeError, load_json, load_yaml_documents
from pydantic import ValidationError

CLUSTERNET_GROUPS = frozenset({APPS_GROUP, CLUSTERS_GROUP})
FILE_SUFFIXES = frozenset({".yaml", ".yml", ".json"})

# Without an API server to ask, scope is known for the built-in kinds below; any other kind is
# namespaced when it names a namespace and cluster-scoped when it does not.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "StorageClass",
        "PriorityClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "APIService",
        "IngressClass",
        "RuntimeClass",
    }
)
NAMESPACED_KINDS = frozenset(
    {
        "ConfigMap",
        "ControllerRevision",
        "CronJob",
        "DaemonSet",
        "Deployment",
        "EndpointSlice",
        "Endpoints",
        "Event",
        "HorizontalPodAutoscaler",
        "Ingress",
        "Job",
        "Lease",
        "LimitRange",
        "NetworkPolicy",
        "PersistentVolumeClaim",
        "Pod",
        "PodDisruptionBudget",
        "PodTemplate",
        "ReplicaSet",
        "ReplicationController",
        "ResourceQuota",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
        "StatefulSet",
    }
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ObjectError(ValueError):
    """One problem in one object, located down to the field."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        document: int | None = None,
        kind: str = "",
        name: str = "",
        field: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.document = document
        self.kind = kind
        self.name = name
        self.field = field

    def location(self) -> str:
        """`file: document N (Kind namespace/name)`, leaving out what is unknown."""
        where = ": ".join(
            part for part in (self.source, f"document {self.document}" if self.document else "") if part
        )
        what = " ".join(part for part in (self.kind, self.name) if part)
        if what:
            where = f"{where} ({what})" if where else what
        return where

    def __str__(self) -> str:
        return ": ".join(part for part in (self.location(), self.field, self.message) if part)


class ObjectErrors(ObjectError):
    """Several problems found by one load; attributes are those of the first, `errors` has all."""

    def __init__(self, errors: Sequence[ObjectError]) -> None:
        first = errors[0]
        super().__init__(
            first.message,
            source=first.source,
            document=first.document,
            kind=first.kind,
            name=first.name,
            field=first.field,
        )
        self.errors = list(errors)

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)


def _combine(errors: Sequence[ObjectError]) -> ObjectError:
    return errors[0] if len(errors) == 1 else ObjectErrors(errors)


def _flatten(error: ObjectError) -> list[ObjectError]:
    return error.errors if isinstance(error, ObjectErrors) else [error]


def field_path(loc: Iterable[int | str]) -> str:
    """A pydantic error location as a JSON path: `spec.subscribers[0].clusterAffinity`."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            path += f".{part}" if path else part
        else:
            path += f"[{json.dumps(part)}]"
    return path


def _message(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    message = str(error["msg"])
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    return message


def guess_resource(kind: str) -> str:
    """The plural resource name Kubernetes would most likely serve `kind` under.

    Follows apimachinery's UnsafeGuessKindToResource, except that "y" turns into "ies" only
    after a consonant (Gateway -> gateways, as real APIs name it, not "gatewaies").
    """
    lower = kind.lower()
    if lower.endswith("endpoints"):
        return lower
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def is_namespaced_kind(kind: str, namespace: str | None) -> bool:
    if kind in CLUSTER_SCOPED_KINDS:
        return False
    return bool(namespace) or kind in NAMESPACED_KINDS


def _validate(
    model: type[KubeObject], data: dict[str, Any], *, source: str, document: int | None, kind: str, name: str
) -> KubeObject:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        errors = [
            ObjectError(
                _message(detail),
                source=source,
                document=document,
                kind=kind,
                name=name,
                field=field_path(detail["loc"]),
            )
            for detail in err.errors()
        ]
        raise _combine(errors) from err


def _find_kind(group: str, kind: str) -> KindInfo | None:
    return next((info for info in all_kinds() if info.group == group and info.kind == kind), None)


def _unknown_kind_message(group: str, kind: str) -> str:
    served = sorted(info.kind for info in all_kinds() if info.group == group)
    close = difflib.get_close_matches(kind, served, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{group} has no kind {kind!r}{hint}; it serves {', '.join(served)}"


def _wrap_as_manifest(data: dict[str, Any], *, source: str, document: int | None) -> KubeObject:
    """Clusternet's shadow API: store the object as-is in a Manifest named after it."""
    api_version: str = data["apiVersion"]
    kind: str = data["kind"]
    template = copy.deepcopy(data)
    metadata: dict[str, Any] = template["metadata"]
    name: str = metadata["name"]
    group, _, version = api_version.rpartition("/")
    namespaced = is_namespaced_kind(kind, metadata.get("namespace"))
    resource = guess_resource(kind)
    labels = dict(metadata.get("labels") or {})
    labels |= {
        known.CONFIG_GROUP: group,
        known.CONFIG_VERSION: version,
        known.CONFIG_KIND: kind,
        known.CONFIG_NAME: name,
    }
    if namespaced:
        namespace = metadata.get("namespace") or "default"
        metadata["namespace"] = namespace
        labels[known.CONFIG_NAMESPACE] = namespace
        manifest_name = f"{resource}.{namespace}.{name}"
        display = f"{namespace}/{name}"
    else:
        metadata.pop("namespace", None)
        manifest_name = f"{resource}.{name}"
        display = name
    manifest = {
        "apiVersion": Manifest.api_version_string(),
        "kind": Manifest.KIND,
        "metadata": {"name": manifest_name, "namespace": known.RESERVED_NAMESPACE, "labels": labels},
        "template": template,
    }
    return _validate(Manifest, manifest, source=source, document=document, kind=kind, name=display)


def parse_object(data: Any, source: str = "", document: int | None = None) -> KubeObject:
    """One decoded document to an object: a Clusternet kind, or any other object as a Manifest.

    Like kubectl, a namespaced Clusternet kind without a namespace lands in "default" and a
    namespace given to a cluster-scoped kind is dropped. Raises ObjectError (or ObjectErrors).
    """
    where: dict[str, Any] = {"source": source, "document": document}
    if not isinstance(data, dict):
        raise ObjectError(f"expected a Kubernetes object (a mapping), got {type(data).__name__}", **where)
    kind = data.get("kind")
    metadata = data.get("metadata") or {}
    name = metadata.get("name") if isinstance(metadata, dict) else None
    for field, value in (("apiVersion", data.get("apiVersion")), ("kind", kind)):
        if not isinstance(value, str) or not value:
            raise ObjectError("required field is missing", field=field, **where)
    where["kind"] = kind
    if not isinstance(metadata, dict):
        raise ObjectError(f"must be a mapping, not {type(metadata).__name__}", field="metadata", **where)
    if not isinstance(name, str) or not name:
        raise ObjectError("required field is missing", field="metadata.name", **where)
    where["name"] = name

    group, _, version = data["apiVersion"].rpartition("/")
    if group not in CLUSTERNET_GROUPS:
        return _wrap_as_manifest(data, source=source, document=document)

    info = _find_kind(group, data["kind"])
    if info is None:
        raise ObjectError(_unknown_kind_message(group, data["kind"]), field="kind", **where)
    if version != info.version:
        raise ObjectError(
            f"{group} serves {info.kind} as {info.api_version}, not {data['apiVersion']!r}",
            field="apiVersion",
            **where,
        )
    metadata = dict(metadata)
    if info.namespaced:
        metadata["namespace"] = metadata.get("namespace") or "default"
        where["name"] = f"{metadata['namespace']}/{name}"
    else:
        metadata.pop("namespace", None)
    return _validate(info.model, {**data, "metadata": metadata}, **where)


def _parse_documents(docs: Iterable[tuple[int, Any]], source: str) -> list[KubeObject]:
    objects: list[KubeObject] = []
    errors: list[ObjectError] = []
    for index, doc in docs:
        if doc is None:
            continue
        try:
            objects.append(parse_object(doc, source=source, document=index))
        except ObjectError as err:
            errors.extend(_flatten(err))
    if errors:
        raise _combine(errors)
    return objects


def _yaml_documents(text: str | bytes, source: str) -> list[tuple[int, Any]]:
    try:
        return list(enumerate(load_yaml_documents(text), start=1))
    except DecodeError as err:
        raise ObjectError(str(err), source=source, document=err.document) from err


def load_documents(text: str | bytes, source: str = "") -> list[KubeObject]:
    """Every object in a (multi-document) YAML or JSON text; empty documents are skipped.

    Documents are numbered from 1 in the order they appear, counting empty ones, so a number in
    an error is the position a person finds by counting `---` separators.
    """
    return _parse_documents(_yaml_documents(text, source), source)


def _load_file(path: Path) -> list[KubeObject]:
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ObjectError(f"cannot read: {err}", source=source) from err
    if path.suffix != ".json":
        return load_documents(data, source)
    try:
        return _parse_documents([(1, load_json(data))], source)
    except DecodeError as err:
        raise ObjectError(str(err), source=source, document=err.document) from err


def load_path(path: str | Path) -> list[KubeObject]:
    """Objects from a file, or from every *.yaml, *.yml and *.json under a directory (sorted)."""
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in FILE_SUFFIXES)
    elif root.exists():
        files = [root]
    else:
        raise ObjectError("no such file or directory", source=str(root))
    objects: list[KubeObject] = []
    errors: list[ObjectError] = []
    for file in files:
        try:
            objects.extend(_load_file(file))
        except ObjectError as err:
            errors.extend(_flatten(err))
    if errors:
        raise _combine(errors)
    return objects


__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "ObjectError",
    "ObjectErrors",
    "field_path",
    "guess_resource",
    "is_namespaced_kind",
    "load_documents",
    "load_path",
    "parse_object",
]

"""What the sim's API server checks before it stores an object, with Kubernetes' error wording.

An object needs apiVersion, kind and a valid name; its scope comes from the built-in kinds or
from a CustomResourceDefinition already in the cluster; a namespaced object needs its Namespace
to exist; a workload's replicas and resource requests must parse. What passes is returned ready
to store: namespace defaulted, system fields wiped, owner label set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef, RawObject
from clusternet_nats.agent.backends.sim import workloads
from clusternet_nats.agent.backends.sim.store import Body, ObjectTable, json_copy
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.api.loader import CLUSTER_SCOPED_KINDS, NAMESPACED_KINDS
from clusternet_nats.api.meta import ObjectMeta
from pydantic import ValidationError

CRD_API_VERSION = "apiextensions.k8s.io/v1"
_EXCERPT = 100
_SYSTEM_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


class AdmissionError(ValueError):
    """The object is rejected; the message says which object and why."""


def namespace_ref(name: str) -> ObjectRef:
    return ObjectRef("v1", "Namespace", "", name)


def namespace_body(name: str) -> Body:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _crd_scope(objects: ObjectTable, api_version: str, kind: str) -> str | None:
    group = api_version.rpartition("/")[0]
    for obj in objects:
        if obj.ref.api_version != CRD_API_VERSION or obj.ref.kind != "CustomResourceDefinition":
            continue
        spec = obj.body.get("spec") or {}
        if spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind:
            return str(spec.get("scope", "Namespaced"))
    return None


def _namespaced(objects: ObjectTable, api_version: str, kind: str, namespace: str | None) -> bool:
    if kind in CLUSTER_SCOPED_KINDS:
        return False
    if kind in NAMESPACED_KINDS:
        return True
    scope = _crd_scope(objects, api_version, kind)
    return scope == "Namespaced" if scope is not None else bool(namespace)


def _check(ref: ObjectRef, body: Body, validate: Callable[[Body], Any]) -> None:
    try:
        validate(body)
    except ValueError as err:
        raise AdmissionError(f"{ref} is invalid: {err}") from None


def _excerpt(manifest: RawObject) -> str:
    text = json.dumps(manifest, separators=(",", ":"), default=str)
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."


def admit(objects: ObjectTable, owner: str, manifest: RawObject) -> tuple[ObjectRef, Body]:
    api_version, kind, metadata = manifest.get("apiVersion"), manifest.get("kind"), manifest.get("metadata")
    if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
        raise AdmissionError(f"invalid object {_excerpt(manifest)}: apiVersion and kind must be set")
    try:
        meta = ObjectMeta.model_validate(metadata if isinstance(metadata, dict) else {})
    except ValidationError as err:
        details = "; ".join(f"metadata.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise AdmissionError(f"invalid {kind} {_excerpt(manifest)}: {details}") from None
    if not meta.name:
        raise AdmissionError(f"invalid {kind} {_excerpt(manifest)}: metadata.name: Required value")
    namespace = (meta.namespace or "default") if _namespaced(objects, api_version, kind, meta.namespace) else ""
    ref = ObjectRef(api_version, kind, namespace, meta.name)
    if namespace and objects.get(namespace_ref(namespace)) is None:
        raise AdmissionError(f'{ref}: namespaces "{namespace}" not found')
    body: Body = json_copy(dict(manifest))
    if workloads.is_replicated(ref):
        _check(ref, body, workloads.replicas)
        _check(ref, body, workloads.pod_request)
    if workloads.is_replicated(ref) or workloads.is_job(ref):
        body.pop("status", None)  # computed by the sim's controllers, never taken from input
    new_meta: dict[str, Any] = {k: v for k, v in body["metadata"].items() if k not in _SYSTEM_FIELDS}
    if namespace:
        new_meta["namespace"] = namespace
    else:
        new_meta.pop("namespace", None)
    new_meta["labels"] = {**(new_meta.get("labels") or {}), APPLIED_BY_DESCRIPTION: owner}
    body["metadata"] = new_meta
    return ref, body

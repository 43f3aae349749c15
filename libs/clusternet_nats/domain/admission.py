"""What kube-apiserver would refuse, refused at the door in its words, before anything is stored.

The hub stores the Kubernetes objects users apply (in Manifests) without a schema of their own
kinds, and the scheduler divides their replicas: a `replicas: -4` kube-apiserver answers with a
422 would otherwise be accepted here and divided into negative per-cluster replicas, and an
invalid quantity would fail only in a child cluster, long after the write said 201. These are
the checks of apimachinery's validation that matter for what Clusternet reads (replicas,
resources, metadata sizes); names and labels are checked by the object model (api/meta.py).

Pure: a body (a JSON-compatible mapping) in, every problem out, each naming its field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from clusternet_nats.api import ObjectError
from clusternet_nats.api.quantity import QuantityError, parse_quantity

MAX_ANNOTATIONS_BYTES = 256 * 1024
"""apimachinery's TotalAnnotationSizeLimitB: keys and values of one object's annotations together."""

_QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_NON_NEGATIVE = "must be greater than or equal to 0"
_NOT_A_QUANTITY = f"quantities must match the regular expression '{_QUANTITY_PATTERN}'"

_COUNTS: dict[str, tuple[str, ...]] = {
    "Deployment": ("replicas",),
    "ReplicaSet": ("replicas",),
    "StatefulSet": ("replicas",),
    "ReplicationController": ("replicas",),
    "Job": ("parallelism", "completions"),
}
"""Integer fields of each workload kind's spec that kube-apiserver requires to be >= 0."""

_POD_SPECS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
"""Where each kind keeps the pod spec whose containers' resources are quantities."""


def _invalid(field: str, value: Any, detail: str) -> str:
    """kube-apiserver's field.Invalid wording: `Invalid value: -4: must be ...` (strings quoted)."""
    shown = f'"{value}"' if isinstance(value, str) else value
    return f"Invalid value: {shown}: {detail}"


def _at(body: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _counts(kind: str, body: Mapping[str, Any]) -> Iterator[ObjectError]:
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        return
    for name in _COUNTS.get(kind, ()):
        value = spec.get(name)
        if value is None:
            continue
        field = f"spec.{name}"
        if isinstance(value, bool) or not isinstance(value, int):
            yield ObjectError(_invalid(field, value, "must be an integer"), field=field)
        elif value < 0:
            yield ObjectError(_invalid(field, value, _NON_NEGATIVE), field=field)


def _quantity(field: str, value: Any) -> Iterator[ObjectError]:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        yield ObjectError(_invalid(field, value, _NOT_A_QUANTITY), field=field)
        return
    try:
        amount = parse_quantity(value if isinstance(value, str | int) else str(value))
    except QuantityError:
        yield ObjectError(_invalid(field, value, _NOT_A_QUANTITY), field=field)
        return
    if amount < 0:
        yield ObjectError(_invalid(field, value, _NON_NEGATIVE), field=field)


def _resources(kind: str, body: Mapping[str, Any]) -> Iterator[ObjectError]:
    path = _POD_SPECS.get(kind)
    pod = _at(body, path) if path else None
    if not isinstance(pod, Mapping):
        return
    prefix = ".".join(path or ())
    for group in ("initContainers", "containers"):
        containers = pod.get(group)
        if not isinstance(containers, list):
            continue
        for index, container in enumerate(containers):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if not isinstance(resources, Mapping):
                continue
            for section in ("limits", "requests"):
                amounts = resources.get(section)
                if not isinstance(amounts, Mapping):
                    continue
                for resource, value in amounts.items():
                    yield from _quantity(f"{prefix}.{group}[{index}].resources.{section}[{resource}]", value)


def _annotations(body: Mapping[str, Any]) -> Iterator[ObjectError]:
    annotations = _at(body, ("metadata", "annotations"))
    if not isinstance(annotations, Mapping):
        return
    size = sum(len(str(key)) + len(str(value)) for key, value in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        yield ObjectError(f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes", field="metadata.annotations")


def refusals(body: Mapping[str, Any]) -> list[ObjectError]:
    """Every reason kube-apiserver would refuse `body`, each with its field and the object's kind.

    A Manifest is judged by its template (the object it will become in child clusters), with
    fields under `template.`."""
    kind = body.get("kind")
    if not isinstance(kind, str):
        return []
    errors = [*_counts(kind, body), *_resources(kind, body), *_annotations(body)]
    template = body.get("template")
    if kind == "Manifest" and isinstance(template, Mapping):
        for error in refusals(template):
            error.field = f"template.{error.field}"
            errors.append(error)
    name = _at(body, ("metadata", "name"))
    for error in errors:
        error.kind, error.name = kind, name if isinstance(name, str) else ""
    return errors

"""What a cluster sets on an object, trimmed before it is stored as a feed: Clusternet's trimmers
(pkg/hub/registry/shadow/template/trimmer.go), whose rules are ours too.

Why: a feed is applied afresh in each child cluster, so what the storing apiserver or a
controller wrote on it (timestamps, versions, managed fields, status; a Service's allocated
cluster IPs and node ports, a Job's controller-uid selector and labels) is meaningless there and
often refused (a cluster IP outside the child's range, a Job selector it did not generate). Two
doors take objects in, the hub's shadow API and the bridge from a parent apiserver; both trim
here, in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusternet_nats.api.loader import CLUSTERNET_GROUPS


def _remove(obj: dict[str, Any], *path: str) -> None:
    """Deletes the field at `path`, if every step before the last is a mapping."""
    for step in path[:-1]:
        child = obj.get(step)
        if not isinstance(child, dict):
            return
        obj = child
    obj.pop(path[-1], None)


def trim_common_metadata(obj: dict[str, Any]) -> None:
    """Drops (in place) what the storing apiserver sets in metadata; the uid stays, as Clusternet
    keeps it for patches (and the Manifest's uid replaces it when read)."""
    for field in ("creationTimestamp", "managedFields", "resourceVersion", "selfLink"):
        _remove(obj, "metadata", field)


def trim_core_service(obj: dict[str, Any]) -> None:
    """Drops (in place) what a cluster allocates to a Service of a given type: its cluster IPs
    (unless headless), and for NodePort and LoadBalancer its health check node port and every
    port's nodePort."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        return
    cluster_ip = spec.get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip != "None":
        spec.pop("clusterIP")
        spec.pop("clusterIPs", None)
    if spec["type"] not in ("NodePort", "LoadBalancer"):
        return
    health = spec.get("healthCheckNodePort")
    if isinstance(health, int) and not isinstance(health, bool):
        del spec["healthCheckNodePort"]
    ports = spec.get("ports")
    if isinstance(ports, list) and all(isinstance(port, dict) for port in ports):
        spec["ports"] = [{k: v for k, v in port.items() if k != "nodePort"} for port in ports]


def trim_batch_job(obj: dict[str, Any]) -> None:
    """Drops (in place) what the Job controller adds: its controller-uid selector and labels, the
    job-name label under batch.kubernetes.io, and the pod template's creationTimestamp."""
    for label in ("controller-uid", "batch.kubernetes.io/controller-uid"):
        _remove(obj, "spec", "selector", "matchLabels", label)
    _remove(obj, "spec", "template", "metadata", "creationTimestamp")
    for label in ("controller-uid", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"):
        _remove(obj, "spec", "template", "metadata", "labels", label)


def trim_status(obj: dict[str, Any]) -> None:
    _remove(obj, "status")


_KIND_TRIMMERS: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    ("batch", "Job"): trim_batch_job,
    ("", "Service"): trim_core_service,
}


def _api_group(obj: dict[str, Any]) -> str:
    """The group of the object's apiVersion ("" for the core group, or without one)."""
    api_version = obj.get("apiVersion")
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def trimmed_kind(obj: dict[str, Any]) -> bool:
    """Whether `trim` touches this object: a feed of any kind but Clusternet's own, which the
    loader wraps as a Manifest (api/loader.py), never those kinds themselves."""
    return _api_group(obj) not in CLUSTERNET_GROUPS


def trim(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj`, trimmed in place as the shadow API stores it (Clusternet's trimResult); one of
    Clusternet's own kinds is left as it is (`trimmed_kind`)."""
    if not trimmed_kind(obj):
        return obj
    trim_common_metadata(obj)
    kind = obj.get("kind")
    trimmer = _KIND_TRIMMERS.get((_api_group(obj), kind if isinstance(kind, str) else ""))
    if trimmer is not None:
        trimmer(obj)
    trim_status(obj)
    return obj

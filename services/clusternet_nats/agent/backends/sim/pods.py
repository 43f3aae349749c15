"""The pods a simulated cluster's workloads would have, derived for its API server to list.

The sim does not keep pods: it places each workload's replicas and counts them
(workloads.py). For `kubectl get pods` these counts become Pod objects: a Deployment's named
`<name>-<template hash>-<suffix>` (the hash changes with the pod template, as a new ReplicaSet's
does), a StatefulSet's `<name>-<ordinal>`, a ReplicaSet's and a Job's `<name>-<suffix>`; the
first `readyReplicas` Running and Ready, the rest Pending (no node could take them), a Job's
Succeeded. Names, uids and timestamps are derived from the workload, so the same workload always
gives the same pods. Which node each pod is on is not known (the placement counts per node, not
per pod), so `spec.nodeName` is left unset.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import workloads
from clusternet_nats.agent.backends.sim.store import Body, SimObject

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""Kubernetes' name-suffix alphabet (no vowels, no look-alikes)."""


def _suffix(seed: str, length: int) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def _names(obj: SimObject, count: int) -> list[str]:
    name, uid = obj.ref.name, obj.body["metadata"]["uid"]
    if obj.ref.kind == "StatefulSet":
        return [f"{name}-{i}" for i in range(count)]
    if obj.ref.kind == "Deployment":
        template = json.dumps((obj.body.get("spec") or {}).get("template") or {}, sort_keys=True)
        prefix = f"{name}-{_suffix(template, 10)}"
    else:
        prefix = name
    return [f"{prefix}-{_suffix(f'{uid}/{prefix}/{i}', 5)}" for i in range(count)]


def _pod(obj: SimObject, name: str, phase: str) -> Body:
    spec: dict[str, Any] = (obj.body.get("spec") or {}).get("template") or {}
    meta = obj.body["metadata"]
    containers = [c for c in (spec.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    running = phase == "Running"
    statuses = [
        {"name": c.get("name", ""), "image": c.get("image", ""), "ready": running, "restartCount": 0}
        | ({"state": {"running": {"startedAt": meta["creationTimestamp"]}}} if running else {})
        for c in containers
    ]
    owner: Body = {"apiVersion": obj.ref.api_version, "kind": obj.ref.kind, "name": obj.ref.name}
    owner |= {"uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}
    ready = "True" if running else "False"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": obj.ref.namespace,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{meta['uid']}/{name}")),
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
            "labels": dict((spec.get("metadata") or {}).get("labels") or {}),
            "ownerReferences": [owner],
        },
        "spec": dict(spec.get("spec") or {}),
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": ready}, {"type": "PodScheduled", "status": ready}],
            "containerStatuses": statuses,
        },
    }


def pods_of(obj: SimObject) -> list[tuple[ObjectRef, Body]]:
    """The pods of one workload (none for anything else)."""
    status = obj.body.get("status") or {}
    if workloads.is_replicated(obj.ref):
        want, ready = workloads.replicas(obj.body), int(status.get("readyReplicas") or 0)
        phases = ["Running"] * ready + ["Pending"] * max(want - ready, 0)
    elif workloads.is_job(obj.ref):
        phases = ["Succeeded"] * int(status.get("succeeded") or 0)
    else:
        return []
    return [
        (ObjectRef("v1", "Pod", obj.ref.namespace, name), _pod(obj, name, phase))
        for name, phase in zip(_names(obj, len(phases)), phases, strict=True)
    ]


def pod_ready(body: Body) -> str:
    """kubectl's READY column: ready containers over containers."""
    statuses = (body.get("status") or {}).get("containerStatuses") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(statuses)}"

"""Kubernetes objects as read from a parent apiserver, turned into our models and back.

What the apiserver adds (resourceVersion, managedFields, generation, finalizers, kubectl's
last-applied annotation, status) is not part of what a user asked for: it is dropped before an
object is published to NATS, so an object that did not change publishes nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from clusternet_nats.api import KubeObject, ObjectError, ObjectErrors, parse_object
from clusternet_nats.api.yamljson import DecodeError, bounded
from clusternet_nats.domain.admission import refusals
from clusternet_nats.domain.trimming import trim, trimmed_kind
from clusternet_nats.kube.rest import Json
from clusternet_nats.store import object_key

FINALIZER = "apps.clusternet.io/finalizer"
"""Clusternet's finalizer: a user's object stays on the parent until the bridge removed it from NATS."""

BRIDGED = "clusternet-nats.io/bridged"
"""Annotation on what the bridge created (Manifests of feeds on NATS, mirrors on the parent), so
it deletes only what it created."""

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
OUR_KIND_METADATA = ("name", "namespace", "uid", "creationTimestamp", "labels", "annotations")
"""Our kinds keep the parent's uid on NATS too, so a Subscription's binding (keyed by uid) matches."""
FEED_METADATA = ("name", "namespace", "labels", "annotations")
"""A feed is applied afresh in each child: the parent's uid and timestamps mean nothing there."""


def key_of(obj: Json) -> str:
    """The NATS key of a Kubernetes object (`<namespace>.<name>` or `<name>`)."""
    meta = metadata(obj)
    return object_key(meta.get("namespace") or None, str(meta.get("name", "")))


def metadata(obj: Json) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def user_intent(obj: Json, keep: tuple[str, ...]) -> Json:
    """The object without what the apiserver added: status, versions, managed fields, finalizers;
    a feed also without what the parent's controllers allocated to it (domain/trimming.py: a
    Service's cluster IPs and node ports, a Job's controller-uid selector), which a child would
    refuse."""
    meta = {k: v for k, v in metadata(obj).items() if k in keep}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    intent = {**{k: v for k, v in obj.items() if k not in ("metadata", "status")}, "metadata": meta}
    # A copy to trim: trimming is in place, and `obj` is the informer's.
    return trim(copy.deepcopy(intent)) if trimmed_kind(intent) else intent


def to_model(obj: Json, keep: tuple[str, ...] = OUR_KIND_METADATA) -> KubeObject:
    """A Clusternet kind, or any other object wrapped as a Manifest; raises ObjectError. Held to
    the limits and admission rules the hub's door applies (api/yamljson.py, domain/admission.py),
    so what the bridge publishes can always be read back."""
    meta = metadata(obj)
    source = f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')} on the parent apiserver"
    try:
        intent = bounded(user_intent(obj, keep))
    except DecodeError as err:
        raise ObjectError(str(err), source=source) from None
    refused = refusals(intent)
    if refused:
        for error in refused:
            error.source = source
        raise ObjectErrors(refused)
    return parse_object(intent, source=source)


def finalizers(obj: Json) -> list[str]:
    return list(metadata(obj).get("finalizers") or [])


def is_deleting(obj: Json) -> bool:
    return bool(metadata(obj).get("deletionTimestamp"))


def is_bridged(obj: Json) -> bool:
    return (metadata(obj).get("annotations") or {}).get(BRIDGED) == "true"

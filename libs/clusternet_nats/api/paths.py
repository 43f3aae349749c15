"""Where each kind lives in the hub's HTTP API, written once for the server and its clients.

The paths are Kubernetes' REST paths (`/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>`)
so that anything that speaks to a kube-apiserver can speak to the hub; the shadow path is
Clusternet's entry point for ordinary Kubernetes objects, stored as Manifests.
"""

from __future__ import annotations

from urllib.parse import quote

from clusternet_nats.api.registry import KindInfo

SHADOW_OBJECTS_PATH = "/apis/shadow/v1alpha1/objects"
"""POST (create) or PUT (apply) any Kubernetes object here to store it as a Manifest."""


def collection_path(info: KindInfo, namespace: str | None = None) -> str:
    """A kind's list/create path: in one namespace, or across all (namespace None)."""
    if info.namespaced and namespace:
        return f"/apis/{info.group}/{info.version}/namespaces/{quote(namespace, safe='')}/{info.plural}"
    return f"/apis/{info.group}/{info.version}/{info.plural}"


def object_path(info: KindInfo, namespace: str | None, name: str) -> str:
    """One object's path; the namespace is ignored for cluster-scoped kinds."""
    return f"{collection_path(info, namespace or 'default')}/{quote(name, safe='')}"


def events_path(namespace: str | None = None) -> str:
    """Events of one namespace, or of all (namespace None)."""
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/events" if namespace else "/api/v1/events"


__all__ = ["SHADOW_OBJECTS_PATH", "collection_path", "events_path", "object_path"]

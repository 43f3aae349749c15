"""Server-side apply of one object, and deletion, against the child's API server.

Server-side apply with our own field manager (`clusternet-agent`, forced) makes the agent the
owner of exactly the fields it sets: other controllers' fields survive, and re-applying an
unchanged object changes nothing (no new resourceVersion, no event). A CRD is applied, then
waited for until Established, and its group versions rediscovered, so its instances, applied
next, find their resource.
"""

from __future__ import annotations

from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef, RawObject
from clusternet_nats.kube.discovery import DEFAULT_NAMESPACE, Discovery, Resource
from clusternet_nats.kube.rest import APPLY_PATCH, Json, KubeApi, KubeError

FIELD_MANAGER = "clusternet-agent"
CRD_API_VERSION = "apiextensions.k8s.io/v1"
ESTABLISH_TIMEOUT = 30


class ManifestError(Exception):
    """A manifest the agent cannot even address: it names the object and the field."""


def describe(manifest: RawObject) -> str:
    """`<kind> <name>` for messages, whatever is missing."""
    meta = manifest.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{manifest.get('kind') or 'object'} {name or '(unnamed)'}"


def identify(manifest: RawObject) -> tuple[str, str, str, str]:
    """apiVersion, kind, namespace (as given) and name; ManifestError naming what is missing."""
    meta = manifest.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind, api_version, name = manifest.get("kind"), manifest.get("apiVersion"), meta.get("name")
    what = describe(manifest)
    for field_name, field_value in (("apiVersion", api_version), ("kind", kind), ("metadata.name", name)):
        if not isinstance(field_value, str) or not field_value:
            raise ManifestError(f"{what}: {field_name} is required")
    namespace = meta.get("namespace") or ""
    if not isinstance(namespace, str):
        raise ManifestError(f"{what}: metadata.namespace must be a string")
    return str(api_version), str(kind), namespace, str(name)


class ServerSideApplier:
    def __init__(self, api: KubeApi, discovery: Discovery) -> None:
        self.api, self.discovery = api, discovery

    async def locate(self, manifest: RawObject) -> tuple[ObjectRef, Resource]:
        api_version, kind, namespace, name = identify(manifest)
        resource = await self.discovery.resource(api_version, kind)
        namespace = (namespace or DEFAULT_NAMESPACE) if resource.namespaced else ""
        return ObjectRef(api_version, kind, namespace, name), resource

    async def apply(self, body: dict[str, Any]) -> tuple[ObjectRef, Resource, Json]:
        """Applies `body`; which object, its resource, and the object as the API server returned it."""
        ref, resource = await self.locate(body)
        if ref.namespace:
            body["metadata"]["namespace"] = ref.namespace
        else:
            body["metadata"].pop("namespace", None)
        query = {"fieldManager": FIELD_MANAGER, "force": "true"}
        path = resource.path(ref.namespace, ref.name)
        applied = await self.api.request("PATCH", path, query, body, APPLY_PATCH)
        if ref.kind == "CustomResourceDefinition" and ref.api_version == CRD_API_VERSION:
            await self._established(ref.name)
            spec = body.get("spec") or {}
            for version in spec.get("versions") or []:
                self.discovery.forget(f"{spec.get('group')}/{version.get('name')}")
        return ref, resource, applied

    async def delete(self, resource: Resource, ref: ObjectRef) -> bool:
        """Deletes (dependents in the background); False when it was already gone or going."""
        try:
            await self.api.request(
                "DELETE", resource.path(ref.namespace, ref.name), {"propagationPolicy": "Background"}
            )
        except KubeError as err:
            if err.status in (404, 409):  # 409: a Namespace still terminating
                return False
            raise
        return True

    async def disown(self, resource: Resource, ref: ObjectRef) -> None:
        """Gives up every field we set (our labels included) on an object that must not be deleted."""
        body = {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": {"name": ref.name}}
        query = {"fieldManager": FIELD_MANAGER, "force": "true"}
        await self.api.request("PATCH", resource.path(ref.namespace, ref.name), query, body, APPLY_PATCH)

    async def _established(self, name: str) -> None:
        path = f"/apis/{CRD_API_VERSION}/customresourcedefinitions"
        query = {"fieldSelector": f"metadata.name={name}", "timeoutSeconds": str(ESTABLISH_TIMEOUT)}
        async for event in self.api.stream(path, query):
            conditions = (event.get("object") or {}).get("status", {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                return
        raise KubeError("WATCH", f"{path}/{name}", 0, f"not Established within {ESTABLISH_TIMEOUT}s")

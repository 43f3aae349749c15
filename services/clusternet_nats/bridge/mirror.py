"""Descriptions and ManagedClusters copied from NATS onto the parent, status included.

They are written by controllers on NATS (deployer, agents), not by users; mirroring them lets
`kubectl get desc,mcls -A` on the parent answer what `cnet get` answers. The parent copy is
marked as the bridge's, and only marked copies are ever updated or deleted. The bridge never
publishes these kinds to NATS, so a mirrored write cannot come back as a change.
"""

from __future__ import annotations

from collections.abc import Awaitable

import structlog
from clusternet_nats.api import KindInfo, KubeObject
from clusternet_nats.api.paths import collection_path, object_path
from clusternet_nats.bridge.objects import BRIDGED, is_bridged, metadata
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import Json, KubeApi, KubeError
from clusternet_nats.store import Informer, split_key
from clusternet_nats.store.views import ObjectViews

log = structlog.get_logger(__name__)


def _desired(obj: KubeObject) -> Json:
    """The NATS object as the parent should hold it: no server-set metadata, marked as ours."""
    data = obj.to_json_dict()
    data.pop("status", None)
    meta = data["metadata"]
    data["metadata"] = {
        "name": meta["name"],
        **({"namespace": meta["namespace"]} if "namespace" in meta else {}),
        **({"labels": meta["labels"]} if meta.get("labels") else {}),
        "annotations": {**(meta.get("annotations") or {}), BRIDGED: "true"},
    }
    return data


def _differs(desired: Json, current: Json) -> bool:
    mine = {k: v for k, v in desired.items() if k != "metadata"}
    theirs = {k: v for k, v in current.items() if k not in ("metadata", "status")}
    meta = metadata(current)
    labels_and_annotations = (meta.get("labels") or None, meta.get("annotations") or None)
    wanted = desired["metadata"]
    return mine != theirs or labels_and_annotations != (wanted.get("labels"), wanted.get("annotations"))


class Mirror:
    """Reconciles one kind: NATS object (+ status) -> parent object (+ status subresource)."""

    def __init__(
        self, api: KubeApi, info: KindInfo, objects: Informer[KubeObject], parent: Reflector, views: ObjectViews
    ) -> None:
        self.api, self.info, self.objects, self.parent, self.views = api, info, objects, parent, views
        self._log = log.bind(kind=info.kind)

    async def reconcile(self, key: str) -> None:
        await self.parent.wait_synced()  # a NATS change may come first
        obj, current = self.objects.get(key), self.parent.get(key)
        namespace, name = split_key(key, self.info.namespaced)
        path = object_path(self.info, namespace, name)
        if obj is None:
            if current is not None and is_bridged(current):
                await self._ignore_missing(self.api.request("DELETE", path))
            return
        if current is not None and not is_bridged(current):
            self._log.warning("bridge.mirror_foreign", key=key)  # made by someone else: leave it alone
            return
        desired = _desired(obj)
        if current is None:
            await self._ensure_namespace(namespace)
            current = await self.api.request("POST", collection_path(self.info, namespace), body=desired)
        elif _differs(desired, current):
            body = {
                **desired,
                "metadata": {**desired["metadata"], "resourceVersion": metadata(current)["resourceVersion"]},
            }
            current = await self.api.request("PUT", path, body={**body, "status": current.get("status")})
        await self._write_status(obj, current, path)

    async def _write_status(self, obj: KubeObject, current: Json, path: str) -> None:
        status = getattr(await self.views.view(self.info, obj.model_copy(deep=True)), "status", None)
        wanted = status.to_json_dict() if status is not None else {}
        if wanted != (current.get("status") or {}):
            await self.api.request("PUT", path + "/status", body={**current, "status": wanted})

    async def _ensure_namespace(self, namespace: str) -> None:
        if not namespace:
            return
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        try:
            await self.api.request("POST", "/api/v1/namespaces", body=body)
        except KubeError as err:
            if not err.conflict:
                raise

    @staticmethod
    async def _ignore_missing(request: Awaitable[Json]) -> None:
        try:
            await request
        except KubeError as err:
            if not err.not_found:
                raise

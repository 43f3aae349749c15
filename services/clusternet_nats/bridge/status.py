"""Subscription status written back onto the parent's status subresource.

What `kubectl get subs -o yaml` shows on the parent is what `cnet get` shows: the same
`store.views.ObjectViews` merge of the scheduler's binding and the deployer's aggregated status.
Only `/status` is written, and only when it differs, so the write's watch event changes nothing
the bridge publishes (specs ignore status) and produces no further write.
"""

from __future__ import annotations

from clusternet_nats.api import KindInfo, ObjectError
from clusternet_nats.api.paths import object_path
from clusternet_nats.bridge.objects import is_deleting, metadata, to_model
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import KubeApi
from clusternet_nats.store.views import ObjectViews


class StatusWriter:
    def __init__(self, api: KubeApi, info: KindInfo, reflector: Reflector, views: ObjectViews) -> None:
        self.api, self.info, self.reflector, self.views = api, info, reflector, views

    async def reconcile(self, key: str) -> None:
        await self.reflector.wait_synced()  # a NATS change may come first
        obj = self.reflector.get(key)
        if obj is None or is_deleting(obj):
            return
        try:
            model = to_model(obj)
        except ObjectError:
            return  # reported by the spec publisher
        status = getattr(await self.views.view(self.info, model), "status", None)
        wanted = status.to_json_dict() if status is not None else {}
        if wanted == (obj.get("status") or {}):
            return
        meta = metadata(obj)
        path = object_path(self.info, meta.get("namespace"), str(meta["name"])) + "/status"
        # A PUT carrying the resourceVersion read: a conflict is retried by the queue on fresh data.
        await self.api.request("PUT", path, body={**obj, "status": wanted})

"""What the drift tests share: Descriptions in over NATS, their status, and the agent's Events."""

from __future__ import annotations

import json
from typing import Any

from clusternet_nats.api.apps import (
    DeployerType,
    Description,
    DescriptionPhase,
    DescriptionSpec,
    DescriptionStatus,
    Localization,
    OverrideConfig,
    OverrideSpec,
    OverrideType,
)
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.registry import by_kind
from clusternet_nats.deployer.overrides import SourcedOverride, apply_overrides
from clusternet_nats.domain.descriptions import SUCCESSFULLY_DEPLOYED
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.store.events import list_events
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

LABELS = {"app": "web"}


def deployment(ns: str, name: str, replicas: int) -> dict[str, Any]:
    container = {"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [container]}},
        },
    }


def configmap(ns: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


def namespace(ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}


def without_replicas(cluster_ns: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """`manifest` as the deployer renders it for a cluster whose Localization removes
    `/spec/replicas` (so an HPA, not the Subscription, decides them there)."""
    meta = manifest["metadata"]
    feed = Feed(
        api_version=manifest["apiVersion"], kind=manifest["kind"], namespace=meta["namespace"], name=meta["name"]
    )
    remove = OverrideConfig(
        name="replicas-by-hpa", type=OverrideType.JSON_PATCH, value='[{"op": "remove", "path": "/spec/replicas"}]'
    )
    loc = Localization.new("hpa-owns-replicas", cluster_ns, spec=OverrideSpec(feed=feed, overrides=[remove]))
    rendered, _ = apply_overrides([SourcedOverride(loc, remove)], generic=manifest)
    assert "replicas" not in rendered["spec"] and rendered["spec"]["template"] == manifest["spec"]["template"]
    result: dict[str, Any] = rendered
    return result


class Descriptions:
    """Creates Descriptions for one cluster's namespace and reads back their status and Events."""

    def __init__(self, js: JetStreamContext, cluster_ns: str) -> None:
        self.js = js
        self.cluster_ns = cluster_ns
        self.store: ObjectStore[Description] = ObjectStore(js, by_kind("Description"))
        self.statuses = StatusStore(js, "descriptions-status", DescriptionStatus)

    async def create(self, name: str, manifests: list[dict[str, Any]]) -> str:
        raw = [json.dumps(obj).encode() for obj in manifests]
        desc = Description.new(name, self.cluster_ns, spec=DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw))
        await self.store.create(desc)
        return self.store.key_of(desc)

    async def deployed(self, name: str, manifests: list[dict[str, Any]]) -> str:
        """Creates the Description and waits until the agent reports it Success; its key."""
        key = await self.create(name, manifests)
        await eventually(lambda: self.succeeded(key), 60, what=f"Description {name} Success")
        return key

    async def succeeded(self, key: str) -> bool:
        found = await self.statuses.get(key)
        return found is not None and found.value.phase is DescriptionPhase.SUCCESS

    async def restore_events(self, name: str) -> list[str]:
        """Messages of the agent's Events telling that it put objects back."""
        events = await list_events(self.js, "Description", self.cluster_ns, name)
        return [e.message for e in events if e.reason == SUCCESSFULLY_DEPLOYED and "restored" in e.message]

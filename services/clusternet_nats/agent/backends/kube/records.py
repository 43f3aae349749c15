"""Per-owner records in the child: the kinds each Description applied, kept where they survive.

The agent keeps no local state, so what pruning must list (and which owners exist at all,
for owners whose Description vanished while the agent was down) is stored in the cluster
itself, as ConfigMaps in the agent's namespace (see `ownership`). A record only grows while
objects are applied and shrinks to what is kept once pruning has succeeded, so a crash in
between leaves too much listed, never too little.
"""

from __future__ import annotations

from clusternet_nats.agent.backends.kube import ownership
from clusternet_nats.agent.backends.kube.applier import FIELD_MANAGER
from clusternet_nats.agent.backends.kube.ownership import AGENT_NAMESPACE, Kind
from clusternet_nats.kube.rest import APPLY_PATCH, KubeApi, KubeError

_CONFIGMAPS = f"/api/v1/namespaces/{AGENT_NAMESPACE}/configmaps"
_APPLY = {"fieldManager": FIELD_MANAGER, "force": "true"}


class Records:
    def __init__(self, api: KubeApi) -> None:
        self.api = api

    async def ensure_namespace(self) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NAMESPACE}}
        await self.api.request("PATCH", f"/api/v1/namespaces/{AGENT_NAMESPACE}", _APPLY, body, APPLY_PATCH)

    async def kinds(self, owner: str) -> set[Kind]:
        configmap = await self.api.get(f"{_CONFIGMAPS}/{ownership.record_name(owner)}")
        return set() if configmap is None else ownership.record_kinds(configmap)

    async def save(self, owner: str, kinds: set[Kind]) -> None:
        body = ownership.record(owner, kinds)
        await self.api.request("PATCH", f"{_CONFIGMAPS}/{ownership.record_name(owner)}", _APPLY, body, APPLY_PATCH)

    async def add(self, owner: str, kinds: set[Kind]) -> None:
        known = await self.kinds(owner)
        if not kinds <= known:
            await self.save(owner, known | kinds)

    async def drop(self, owner: str) -> None:
        try:
            await self.api.request("DELETE", f"{_CONFIGMAPS}/{ownership.record_name(owner)}")
        except KubeError as err:
            if not err.not_found:
                raise

    async def owners(self) -> set[str]:
        listing = await self.api.request("GET", _CONFIGMAPS, {"labelSelector": ownership.RECORD_LABEL})
        return {ownership.record_owner(item) for item in listing.get("items") or []}

"""apiVersion + kind to REST resource, as a RESTMapper does, cached per group version.

A Description may name any kind the child serves, CRD instances included, so paths cannot be
hard-coded. Each group version is discovered once; a kind not found refreshes that group
version once (a CRD applied since, or a stale cache), so new kinds are found without polling.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusternet_nats.kube.rest import KubeApi

DEFAULT_NAMESPACE = "default"


class UnknownKind(Exception):
    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(f'no matches for kind "{kind}" in version "{api_version}"')


@dataclass(frozen=True)
class Resource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str = "", name: str = "") -> str:
        """The collection (all namespaces when `namespace` is empty) or one object."""
        base = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        where = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{base}{where}/{self.plural}" + (f"/{name}" if name else "")


class Discovery:
    def __init__(self, api: KubeApi) -> None:
        self._api = api
        self._group_versions: dict[str, dict[str, Resource]] = {}

    async def resource(self, api_version: str, kind: str) -> Resource:
        found = self._group_versions.get(api_version, {}).get(kind)
        if found is None:
            found = (await self._discover(api_version)).get(kind)
        if found is None:
            raise UnknownKind(api_version, kind)
        return found

    def forget(self, api_version: str) -> None:
        """Drops a group version, so its kinds are discovered afresh (after a CRD changes)."""
        self._group_versions.pop(api_version, None)

    async def _discover(self, api_version: str) -> dict[str, Resource]:
        path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        listing = await self._api.get(path)
        if listing is None:
            return {}
        kinds = {
            item["kind"]: Resource(api_version, item["kind"], item["name"], bool(item.get("namespaced")))
            for item in listing.get("resources", [])
            if "/" not in item["name"]  # subresources such as deployments/status
        }
        self._group_versions[api_version] = kinds
        return kinds

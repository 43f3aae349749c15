"""What a word on cnet's command line names, by kubectl's rules: our kinds, the shadow API's, categories.

`subs`, `Subscription`, `subscriptions.apps.clusternet.io`, `deploy`, `deployments.shadow`, `all`
and `clusternet` all resolve here. Our kinds come from the registry; the kinds users have applied
come from the hub's shadow discovery (`GET /apis/shadow/v1alpha1`), asked only when a word is none of
ours, so commands on our kinds cost no extra request.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from clusternet_nats.api import KindInfo, all_kinds
from clusternet_nats.api.paths import collection_path
from clusternet_nats.cli.client import HubClient, HubError, Object

SHADOW_GROUP = "shadow"
SHADOW_PREFIX = "/apis/shadow/v1alpha1"


@dataclass(frozen=True)
class Resource:
    """One kind the hub serves, ours (`info`) or a shadow kind (`info` None)."""

    kind: str
    group: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    info: KindInfo | None = None

    @classmethod
    def of(cls, info: KindInfo) -> Resource:
        return cls(
            info.kind, info.group, info.plural, info.singular, info.namespaced, info.short_names, info.categories, info
        )

    @classmethod
    def shadow(cls, entry: Object) -> Resource:
        """From one entry of the shadow group's APIResourceList."""
        return cls(
            kind=str(entry.get("kind", "")),
            group=SHADOW_GROUP,
            plural=str(entry.get("name", "")),
            singular=str(entry.get("singularName") or str(entry.get("kind", "")).lower()),
            namespaced=bool(entry.get("namespaced")),
            short_names=tuple(entry.get("shortNames") or ()),
            categories=tuple(entry.get("categories") or ()),
        )

    @property
    def name(self) -> str:
        """`subscription.apps.clusternet.io`, `deployment.shadow`: as kubectl names a kind in its output."""
        return f"{self.singular}.{self.group}"

    def names(self) -> tuple[str, ...]:
        return (self.kind.lower(), self.plural, self.singular, *self.short_names)

    def namespace(self, namespace: str | None) -> str | None:
        return namespace if self.namespaced else None

    def collection(self, namespace: str | None) -> str:
        """The list path, in `namespace` or across all (None)."""
        if self.info is not None:
            return collection_path(self.info, self.namespace(namespace))
        if self.namespaced and namespace:
            return f"{SHADOW_PREFIX}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{SHADOW_PREFIX}/{self.plural}"

    def path(self, namespace: str | None, name: str) -> str:
        return f"{self.collection(namespace or 'default')}/{quote(name, safe='')}"


async def shadow_resources(client: HubClient) -> list[Resource]:
    """The kinds users have applied, as the hub's shadow discovery lists them."""
    data = await client.get(SHADOW_PREFIX)
    return [Resource.shadow(entry) for entry in data.get("resources") or [] if "/" not in str(entry.get("name", ""))]


def _matches(resource: Resource, word: str, group: str) -> bool:
    return word in resource.names() and (not group or resource.group == group)


class Resolver:
    """Resolves words against our kinds first and the shadow group's only when needed (one request)."""

    def __init__(self, client: HubClient) -> None:
        self.client = client
        self._shadow: list[Resource] | None = None
        self.ours = [Resource.of(info) for info in all_kinds()]

    async def shadow(self) -> list[Resource]:
        if self._shadow is None:
            self._shadow = await shadow_resources(self.client)
        return self._shadow

    async def resolve(self, text: str) -> list[Resource]:
        """The kinds `text` names: one kind, or every kind of a category (`all`, `clusternet`)."""
        word = text.lower()
        name, _, group = word.partition(".")
        ours = [r for r in self.ours if _matches(r, name, group)]
        if ours:
            return ours
        in_category = [r for r in self.ours if word in r.categories]
        if group in ("", SHADOW_GROUP):
            shadow = await self.shadow()
            found = [r for r in shadow if _matches(r, name, group)]
            if found:
                return found[:1]
            in_category += [r for r in shadow if word in r.categories]
        if in_category or word == "all":
            return in_category
        raise HubError(f'the server doesn\'t have a resource type "{text}"')

    async def one(self, text: str) -> Resource:
        """Exactly one kind: a category is not one."""
        found = await self.resolve(text)
        if len(found) != 1 or text.lower() in found[0].categories:
            raise HubError(f'"{text}" names several kinds; name one kind')
        return found[0]

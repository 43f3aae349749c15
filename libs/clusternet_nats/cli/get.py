"""`cnet get`: fetch one or more kinds (all kinds at once), then print them as kubectl would.

Names that do not exist are collected rather than raised, so `cnet get subs a b` prints `a`
and reports `b`, as kubectl does; only an unreachable hub stops the command.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

from clusternet_nats.api import KindInfo
from clusternet_nats.api.paths import object_path
from clusternet_nats.cli.client import HubClient, HubError, Object
from clusternet_nats.cli.columns import object_table, resource_name
from clusternet_nats.cli.printers import as_list, to_json, to_yaml

OUTPUTS = ("wide", "yaml", "json", "name")


@dataclass
class Fetched:
    info: KindInfo
    objects: list[Object] = field(default_factory=list)
    missing: list[HubError] = field(default_factory=list)


@dataclass(frozen=True)
class Query:
    infos: list[KindInfo]
    names: list[str]
    namespace: str | None
    """None: across all namespaces."""
    selector: str = ""

    def namespace_of(self, info: KindInfo) -> str | None:
        return self.namespace if info.namespaced else None

    async def _fetch(self, client: HubClient, info: KindInfo) -> Fetched:
        fetched = Fetched(info)
        if not self.names:
            fetched.objects = await client.list_objects(info, self.namespace_of(info), self.selector)
        for name in self.names:
            try:
                fetched.objects.append(await client.get(object_path(info, self.namespace_of(info), name)))
            except HubError as err:
                if err.code != 404:
                    raise
                fetched.missing.append(err)
        return fetched

    async def fetch(self, client: HubClient) -> list[Fetched]:
        return list(await asyncio.gather(*(self._fetch(client, info) for info in self.infos)))


def render(results: list[Fetched], output: str | None, all_namespaces: bool, single: bool) -> str:
    """The text to print ("" for nothing); `single`: one name of one kind was asked for."""
    items = [obj for result in results for obj in result.objects]
    if output in ("yaml", "json"):
        if single and not items:
            return ""
        data = items[0] if single else as_list(items)
        return to_yaml(data).rstrip("\n") if output == "yaml" else to_json(data)
    if output == "name":
        return "\n".join(f"{resource_name(r.info)}/{obj['metadata']['name']}" for r in results for obj in r.objects)
    now = datetime.now(UTC)
    tables = [
        object_table(
            r.info, r.objects, now, all_namespaces=all_namespaces, wide=output == "wide", qualified=len(results) > 1
        )
        for r in results
        if r.objects
    ]
    return "\n\n".join(tables)

"""`cnet get`: fetch one or more kinds (all kinds at once), then print them as kubectl would.

Names that do not exist are collected rather than raised, so `cnet get subs a b` prints `a`
and reports `b`, as kubectl does; only an unreachable hub stops the command. `-w` lists, prints,
then follows the hub's watch from the list's resourceVersion, one line per change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from clusternet_nats.cli.client import HubClient, HubError, Object
from clusternet_nats.cli.columns import object_table
from clusternet_nats.cli.printers import as_list, to_json, to_yaml
from clusternet_nats.cli.resources import Resolver, Resource
from clusternet_nats.cli.templates import TemplateError, compile_template, custom_columns, jsonpath

OUTPUTS = ("wide", "yaml", "json", "name", "jsonpath=...", "custom-columns=...")
_TEMPLATES = ("jsonpath=", "custom-columns=")


def check_output(output: str | None) -> None:
    """Raises TemplateError for an output format kubectl would not accept, or a template it cannot read."""
    if output is None or output in OUTPUTS[:4]:
        return
    if output.startswith("jsonpath="):
        compile_template(output.removeprefix("jsonpath="))
    elif output.startswith("custom-columns="):
        custom_columns(output.removeprefix("custom-columns="), [])
    else:
        raise TemplateError(
            f"unable to match a printer suitable for the output format {output!r}; use {', '.join(OUTPUTS)}"
        )


@dataclass
class Fetched:
    resource: Resource
    objects: list[Object] = field(default_factory=list)
    missing: list[HubError] = field(default_factory=list)
    resource_version: str = ""


@dataclass(frozen=True)
class Request:
    """What was asked: kind words, each with names (none: all), as `get subs a b` or `get subs/a deploy/b`."""

    words: list[tuple[str, list[str]]]
    namespace: str | None
    """None: across all namespaces."""
    selector: str = ""

    @classmethod
    def parse(cls, args: list[str], namespace: str | None, selector: str = "") -> Request:
        """kubectl's two forms: `KIND[,KIND] [NAME...]` or `KIND/NAME...` (every argument so)."""
        if any("/" in arg for arg in args):
            if not all("/" in arg for arg in args):
                raise HubError("there is no need to specify a resource type as a separate argument when passing "
                               "arguments in resource/name form (e.g. 'cnet get resource/<resource_name>' instead "
                               "of 'cnet get resource resource/<resource_name>')")
            pairs: dict[str, list[str]] = {}
            for arg in args:
                kind, _, name = arg.partition("/")
                pairs.setdefault(kind, []).append(name)
            return cls(list(pairs.items()), namespace, selector)
        return cls([(kind, args[1:]) for kind in args[0].split(",") if kind], namespace, selector)

    @property
    def single(self) -> bool:
        return len(self.words) == 1 and len(self.words[0][1]) == 1

    @property
    def named(self) -> bool:
        return any(names for _, names in self.words)

    async def resolve(self, client: HubClient) -> list[tuple[Resource, list[str]]]:
        resolver = Resolver(client)
        out: list[tuple[Resource, list[str]]] = []
        for word, names in self.words:
            out += [(resource, names) for resource in await resolver.resolve(word)]
        return out

    async def _fetch(self, client: HubClient, resource: Resource, names: list[str]) -> Fetched:
        fetched = Fetched(resource)
        if not names:
            data = await client.list_at(resource.collection(self.namespace), self.selector)
            fetched.objects = list(data.get("items") or [])
            fetched.resource_version = str((data.get("metadata") or {}).get("resourceVersion") or "")
        for name in names:
            try:
                fetched.objects.append(await client.get(resource.path(self.namespace, name)))
            except HubError as err:
                if err.code != 404:
                    raise
                fetched.missing.append(err)
        return fetched

    async def fetch(self, client: HubClient) -> list[Fetched]:
        resolved = await self.resolve(client)
        return list(await asyncio.gather(*(self._fetch(client, r, names) for r, names in resolved)))


def render(results: list[Fetched], output: str | None, all_namespaces: bool, single: bool) -> str:
    """The text to print ("" for nothing); `single`: one name of one kind was asked for."""
    items = [obj for result in results for obj in result.objects]
    if output in ("yaml", "json") or (output or "").startswith(_TEMPLATES):
        if single and not items:
            return ""
        data = items[0] if single else as_list(items)
        if output == "yaml":
            return to_yaml(data).rstrip("\n")
        if output == "json":
            return to_json(data)
        if output and output.startswith("jsonpath="):
            return jsonpath(output.removeprefix("jsonpath="), data)
        return custom_columns((output or "").removeprefix("custom-columns="), items)
    if output == "name":
        return "\n".join(f"{r.resource.name}/{obj['metadata']['name']}" for r in results for obj in r.objects)
    now = datetime.now(UTC)
    tables = [
        object_table(
            r.resource, r.objects, now, all_namespaces=all_namespaces, wide=output == "wide", qualified=len(results) > 1
        )
        for r in results
        if r.objects
    ]
    return "\n\n".join(tables)


async def follow(
    client: HubClient, request: Request, fetched: Fetched, output: str | None, echo: Callable[[str], None]
) -> None:
    """Prints each change after the list of one kind, as `kubectl get -w` does: a table row without
    its header (or the object in the output format asked for), until the hub ends the stream."""
    resource = fetched.resource
    names = set(next((names for _, names in request.words), []))
    path = resource.collection(request.namespace)
    version = fetched.resource_version
    if names:  # fetched by name: an object's resourceVersion is not a position in every bucket; a list's is
        version = str(((await client.list_at(path, request.selector)).get("metadata") or {}).get("resourceVersion"))
    async for event in client.watch(path, version, request.selector):
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise HubError.from_status(int(obj.get("code") or 500), obj)
        if kind not in ("ADDED", "MODIFIED", "DELETED") or (names and obj["metadata"]["name"] not in names):
            continue
        text = render([Fetched(resource, [obj])], output, request.namespace is None, single=True)
        if output in (None, "wide"):
            text = text.splitlines()[-1]
        echo(text)

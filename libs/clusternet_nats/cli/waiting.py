"""`cnet wait --for=...` and `cnet rollout status subs NAME`: follow objects through the hub's watch.

Both read the object once and then follow its watch from that resourceVersion, so nothing between
the read and the watch is missed and no polling interval delays the answer. The rollout's progress
is the Subscription's own status (desired and completed releases, the scheduler's `Scheduled`
condition, per-cluster availability) and its Descriptions' phase and reason per cluster (their
namespace is the cluster's), printed whenever any of it changes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import typer
from clusternet_nats.api import KindInfo, resolve
from clusternet_nats.api.labels import CLUSTER_NAME, SUBS_NAME, SUBS_NAMESPACE
from clusternet_nats.api.paths import collection_path
from clusternet_nats.cli.client import HubClient, HubError, Object
from clusternet_nats.cli.resources import Resource
from clusternet_nats.store.cancelling import cancel_and_wait

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
SUBSCRIPTION_NAMES = frozenset(resolve("subscription").names())


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (`24h`, `1h30m`, `90s`, `0`), as kubectl and kubeadm read them; a bare
    number is seconds (what `cnet token create --ttl` took before it took durations)."""
    value = text.strip()
    if re.fullmatch(r"\d+(\.\d*)?", value):
        return float(value)
    parts = _PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"invalid duration {text!r}: use a number with a unit, e.g. 30s, 5m, 24h, 1h30m")
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


def duration_option(option: str, text: str) -> float:
    """An option's duration in seconds, or a usage error (exit 2) naming the option."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint=f"'{option}'") from None


@dataclass(frozen=True)
class Condition:
    """What `--for` asks: a condition's status, or the object's deletion."""

    type: str = ""
    status: str = "True"
    delete: bool = False

    @classmethod
    def parse(cls, text: str) -> Condition:
        if text == "delete":
            return cls(delete=True)
        what, _, rest = text.partition("=")
        if what != "condition" or not rest:
            raise ValueError(f"--for={text}: use --for=condition=<Type>[=<status>] or --for=delete")
        kind, _, status = rest.partition("=")
        return cls(kind, status or "True")

    def met(self, obj: Object | None) -> bool:
        if obj is None:
            return self.delete
        for condition in (obj.get("status") or {}).get("conditions") or []:
            if str(condition.get("type", "")).lower() == self.type.lower():
                return str(condition.get("status", "")).lower() == self.status.lower()
        return False


async def snapshot(client: HubClient, collection: str, name: str) -> tuple[Object | None, str]:
    """One object (None: there is none) and the position to watch it from, read as a one-item list."""
    listed = await client.list_at(collection, field_selector=f"metadata.name={name}")
    items = list(listed.get("items") or [])
    return (items[0] if items else None), str((listed.get("metadata") or {}).get("resourceVersion") or "")


def _events(client: HubClient, collection: str, name: str, version: str) -> AsyncIterator[Object]:
    """The watch events of one object."""
    return client.watch(collection, version, field_selector=f"metadata.name={name}")


async def wait(
    client: HubClient, resource: Resource, namespace: str | None, name: str, condition: Condition, seconds: float
) -> str:
    """Waits for one object; the line kubectl prints, or HubError on timeout or a missing object."""
    collection = resource.collection(namespace)
    done = f"{resource.name}/{name} condition met"
    try:
        async with asyncio.timeout(seconds or None):
            obj, version = await snapshot(client, collection, name)
            if condition.met(obj):
                return done
            if obj is None:
                raise HubError(f'{resource.plural}.{resource.group} "{name}" not found', 404, "NotFound")
            async for event in _events(client, collection, name, version):
                gone = event.get("type") == "DELETED"
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and condition.met(
                    None if gone else event.get("object")
                ):
                    return done
    except TimeoutError:
        pass
    raise HubError(f"timed out waiting for the condition on {resource.plural}/{name}")


def _releases(descriptions: list[Object]) -> list[str]:
    """One line per Description (one per cluster and deployer): its phase, and its reason unless Success."""
    lines = []
    for desc in sorted(descriptions, key=lambda d: (d["metadata"].get("namespace", ""), d["metadata"]["name"])):
        status = desc.get("status") or {}
        phase = status.get("phase") or "Pending"
        reason = f": {status['reason']}" if status.get("reason") and phase != "Success" else ""
        meta = desc["metadata"]
        cluster = (meta.get("labels") or {}).get(CLUSTER_NAME) or meta.get("namespace", "")
        lines.append(f"  cluster {cluster} ({meta['name']}): {phase}{reason}")
    return lines


def _warnings(events: Sequence[Object]) -> list[str]:
    """The latest Warning Event of each reason (a missing feed, a failed sync), as the Events report them."""
    latest: dict[str, Object] = {}
    for event in events:
        if event.get("type") == "Warning":
            key = str(event.get("reason", ""))
            when = str(event.get("lastTimestamp") or event.get("eventTime") or "")
            if key not in latest or when >= str(latest[key].get("lastTimestamp") or latest[key].get("eventTime") or ""):
                latest[key] = event
    return [f"  warning {reason}: {event.get('message', '')}" for reason, event in sorted(latest.items())]


def progress(
    sub: Object, descriptions: list[Object], events: Sequence[Object] = ()
) -> tuple[list[str], bool | None]:
    """What to print about a rollout, and True (done), False (failed) or None (still going)."""
    name = sub["metadata"]["name"]
    status = sub.get("status") or {}
    desired, completed = int(status.get("desiredReleases") or 0), int(status.get("completedReleases") or 0)
    scheduled = next((c for c in status.get("conditions") or [] if c.get("type") == "Scheduled"), None)
    lines = [f'subscription "{name}": {completed} of {desired} releases done']
    if scheduled is not None and scheduled.get("status") == "False":
        lines.append(f"  not scheduled ({scheduled.get('reason', '')}): {scheduled.get('message', '')}")
    lines += _releases(descriptions) + _warnings(events)
    failed = [d for d in descriptions if (d.get("status") or {}).get("phase") == "Failure"]
    if desired and completed >= desired and not failed:
        return [*lines, f'subscription "{name}" successfully rolled out'], True
    return lines, False if failed else None


async def _merged(*sources: AsyncIterator[Object]) -> AsyncIterator[None]:
    """Yields once per event of any source (the caller re-reads what it needs)."""
    queue: asyncio.Queue[BaseException | None] = asyncio.Queue()

    async def pump(source: AsyncIterator[Object]) -> None:
        try:
            async for _ in source:
                await queue.put(None)
        except BaseException as err:  # handed to the reader, which raises it
            await queue.put(err)

    tasks = [asyncio.create_task(pump(source)) for source in sources]
    try:
        while True:
            item = await queue.get()
            if isinstance(item, BaseException):
                raise item
            yield None
    finally:
        await cancel_and_wait(tasks)


async def rollout(
    client: HubClient,
    info: KindInfo,
    namespace: str | None,
    name: str,
    echo: Callable[[str], None],
    watch: bool,
    seconds: float,
) -> bool:
    """Prints the rollout's progress whenever it changes; True once every release is done."""
    descriptions_path = collection_path(resolve("description"))
    selector = f"{SUBS_NAME}={name},{SUBS_NAMESPACE}={namespace}"
    shown: list[str] = []

    subs_path = collection_path(info, namespace)

    async def look() -> tuple[bool | None, str, str]:
        sub, sub_rv = await snapshot(client, subs_path, name)
        if sub is None:
            raise HubError(f'subscriptions.{info.group} "{name}" not found', 404, "NotFound")
        listed, events = await asyncio.gather(
            client.list_at(descriptions_path, selector), client.events(info.kind, namespace, name)
        )
        lines, outcome = progress(sub, list(listed.get("items") or []), events)
        if lines != shown:
            for line in lines:
                echo(line)
            shown[:] = lines
        return outcome, sub_rv, str((listed.get("metadata") or {}).get("resourceVersion") or "")

    try:
        async with asyncio.timeout(seconds or None):
            outcome, sub_rv, desc_rv = await look()
            if outcome is not None or not watch:
                return bool(outcome)
            subs = _events(client, subs_path, name, sub_rv)
            descs = client.watch(descriptions_path, desc_rv, selector)
            async for _ in _merged(subs, descs):
                outcome, _, _ = await look()
                if outcome is not None:
                    return outcome
    except TimeoutError:
        echo(f'error: timed out waiting for subscription "{name}" to roll out')
    return False


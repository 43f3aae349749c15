"""Request bodies in, validated objects out; the store is only touched after this succeeds.

A body may be JSON or YAML (Content-Type decides), read by api/yamljson.py as kubectl reads
it (timestamps stay strings) and under its limits. On a kind's path the body must agree with
the path: what the body leaves out (apiVersion, kind, namespace, name) is taken from the path,
and what contradicts it is a 400 naming the field, as kube-apiserver does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web
from clusternet_nats.api import KindInfo, KubeObject, ObjectError, ObjectErrors, parse_object
from clusternet_nats.api.yamljson import DecodeError, bounded, load_json, load_yaml
from clusternet_nats.domain.admission import refusals
from clusternet_nats.hub.errors import ApiError, bad_request, invalid

YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml"})


INLINE_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop (faster than a hop to a thread); larger
ones in `_PARSERS`, so that parsing a hostile or merely large body never stalls `/healthz`."""

_PARSERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hub-body-parser")
"""Bounded: many large bodies at once queue here instead of each taking a thread and its memory."""


async def _off_loop(load: Callable[[bytes], Any], raw: bytes) -> Any:
    if len(raw) <= INLINE_BYTES:
        return load(raw)
    return await asyncio.get_running_loop().run_in_executor(_PARSERS, load, raw)


async def read_body(request: web.Request) -> dict[str, Any]:
    """The body as a mapping; malformed or non-UTF-8 JSON/YAML, or a non-mapping, is a 400."""
    yaml = request.content_type in YAML_TYPES
    data = await decode(await request.read(), "the request body", yaml=yaml)
    if not isinstance(data, dict):
        raise bad_request(f"the request body must be a Kubernetes object (a mapping), not {type(data).__name__}")
    return data


async def decode(raw: bytes, what: str, yaml: bool = False) -> Any:
    """`raw` as JSON (or YAML, which JSON is too), under api/yamljson.py's limits; a 400 saying
    what it should have been."""
    try:
        return await _off_loop(load_yaml if yaml else load_json, raw)
    except DecodeError as err:
        raise bad_request(f"{what} is not valid {'YAML' if yaml else 'JSON'}: {err}") from None


def within_limits(body: dict[str, Any], what: str) -> dict[str, Any]:
    """`body` made by the hub from stored state and a request (a patch's result) held to the
    reader's limits, so that what is stored can always be read back; a 422 naming the limit."""
    try:
        checked: dict[str, Any] = bounded(body)
    except DecodeError as err:
        raise ApiError(422, "Invalid", f"{what} is invalid: {err}") from None
    return checked


def _agree(mapping: dict[str, Any], key: str, expected: str, field: str) -> None:
    value = mapping.get(key)
    if value is None or value == "":
        mapping[key] = expected
    elif value != expected:
        raise bad_request(f"{value!r} does not match {expected!r} given by the request path", field)


def agree_with_path(body: dict[str, Any], info: KindInfo, namespace: str | None, name: str | None) -> dict[str, Any]:
    """The body completed from the path, or a 400 where the two disagree."""
    body = dict(body)
    _agree(body, "apiVersion", info.api_version, "apiVersion")
    _agree(body, "kind", info.kind, "kind")
    metadata = body.setdefault("metadata", {})
    if isinstance(metadata, dict):  # anything else is reported by the model as an invalid field
        metadata = body["metadata"] = dict(metadata)
        if info.namespaced and namespace:
            _agree(metadata, "namespace", namespace, "metadata.namespace")
        if name:
            _agree(metadata, "name", name, "metadata.name")
    return body


def parse(body: dict[str, Any]) -> KubeObject:
    """The typed object, or a 422 Status listing every invalid field (the model's, and what
    kube-apiserver would refuse: domain/admission.py)."""
    try:
        refused = refusals(body)
        if refused:
            raise ObjectErrors(refused)
        return parse_object(body)
    except ObjectError as err:
        api_version = body.get("apiVersion")
        group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
        metadata = body.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        raise invalid(err, group, name if isinstance(name, str) else "") from None


def dry_run(request: web.Request) -> bool:
    """`?dryRun=All` validates and answers without writing; other values are refused."""
    values = request.query.getall("dryRun", [])
    if any(value != "All" for value in values):
        raise bad_request(f"supported values: 'All', not {values!r}", "dryRun")
    return bool(values)

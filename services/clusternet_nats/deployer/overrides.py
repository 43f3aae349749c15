"""Localizations and Globalizations applied to one object in one cluster, as Clusternet's localizer.

Pure functions, so which overrides apply, in which order and what each type does is tested
without NATS. Order: every matching Globalization (clusterAffinity selecting the cluster, absent
= all clusters) by ascending priority, then the cluster's Localizations by ascending priority, so
the highest priority is applied last and wins. Clusternet's quirks are kept on purpose: a JSON
patch whose target path does not exist leaves the object unchanged; the first non-JSONPatch
override of an empty document becomes the document (that is how Helm values start); after the
given overrides, Clusternet's default overrides always remove metadata.managedFields,
metadata.uid and status (`IGNORED_FIELDS`, from Helm values too, as Clusternet does). Values and
the fields they patch are read by api/yamljson.py, so a timestamp stays the string it was.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import jsonpatch
import yaml
from clusternet_nats.api.apps import (
    FieldFormat,
    Globalization,
    Localization,
    OverrideConfig,
    OverrideType,
)
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.yamljson import DecodeError, load_json, load_yaml
from clusternet_nats.domain.feeds import Selector, feed_selector
from clusternet_nats.domain.patches import merge_patch
from jsonpointer import JsonPointer, JsonPointerException

MAX_JSON_PATCH_OPERATIONS = 10000
_FIELD_INDENT = 4
IGNORED_FIELDS = ("/metadata/managedFields", "/metadata/uid", "/status")
"""What Clusternet's defaultOverrideConfigs (ignore-metadata-managedFields, ignore-metadata-uid,
ignore-status) remove from the generic document after every other override."""
_IGNORED_PARTS = tuple(JsonPointer(pointer).parts for pointer in IGNORED_FIELDS)
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True)
class SourcedOverride:
    """One override and the object (Localization, Globalization, Subscription) it comes from."""

    source: KubeObject
    config: OverrideConfig


class OverrideError(Exception):
    """An override that cannot be applied; names the override, its source and the field."""

    def __init__(self, override: SourcedOverride, detail: str) -> None:
        config = override.config
        field = f", fieldPath {config.field_path}" if config.field_path else ""
        super().__init__(
            f"override {config.name or '(unnamed)'!r} ({config.type}{field}) of "
            f"{override.source.kind} {override.source.namespaced_name()}: {detail}"
        )
        self.override = override


def select_overrides(
    selectors: AbstractSet[Selector],
    namespace: str,
    cluster_labels: Mapping[str, str],
    globalizations: Iterable[Globalization],
    localizations: Iterable[Localization],
) -> list[SourcedOverride]:
    """The overrides for an object matched by `selectors`, in the cluster of `namespace`, in order."""

    def targets(feed_holder: Globalization | Localization) -> bool:
        feed = feed_holder.spec.feed
        return feed is not None and feed_selector(feed) in selectors

    globs = [
        glob
        for glob in globalizations
        if targets(glob)
        and (glob.spec.cluster_affinity is None or glob.spec.cluster_affinity.matches(dict(cluster_labels)))
    ]
    locs = [loc for loc in localizations if loc.namespace == namespace and targets(loc)]
    ordered: list[Globalization | Localization] = [*_by_priority(globs), *_by_priority(locs)]
    return [SourcedOverride(source, config) for source in ordered for config in source.spec.overrides or []]


def _by_priority(objects: Sequence[Globalization | Localization]) -> list[Globalization | Localization]:
    def order(obj: Globalization | Localization) -> tuple[int, float, str]:
        created = obj.metadata.creation_timestamp
        return obj.spec.priority, created.timestamp() if created else 0.0, obj.name

    return sorted(objects, key=order)


def apply_overrides(overrides: Iterable[SourcedOverride], generic: Any = None, chart: Any = None) -> tuple[Any, Any]:
    """Clusternet's applyOverrides: returns (generic, chart); None stands for an empty document.

    `generic` is the object (or, for a HelmChart feed, its Helm values); `chart` collects the
    `overrideChart` patches to the HelmChart itself. Raises OverrideError.
    """
    for override in overrides:
        config = override.config
        if not config.value.strip():
            continue
        value = _parse_value(override)
        if config.override_chart:
            if chart is None:
                chart = value
                continue
        elif generic is None and config.type != OverrideType.JSON_PATCH:
            generic = value
            continue
        generic, chart = _apply_one(override, value, generic, chart)
    return _without_ignored_fields(generic), chart


def _without_ignored_fields(doc: Any) -> Any:
    """Clusternet's default JSON patches removing `IGNORED_FIELDS`; an absent one is no change."""
    for parts in _IGNORED_PARTS:
        doc = _without(doc, parts)
    return doc


def _without(doc: Any, parts: Sequence[str]) -> Any:
    """`doc` less the member at `parts`, copying only the mappings on the way; `doc` itself if absent."""
    if not parts or not isinstance(doc, dict) or parts[0] not in doc:
        return doc
    head, rest = parts[0], parts[1:]
    if not rest:
        return {key: value for key, value in doc.items() if key != head}
    inner = _without(doc[head], rest)
    return doc if inner is doc[head] else {**doc, head: inner}


def _parse_value(override: SourcedOverride) -> Any:
    try:
        return load_yaml(override.config.value)  # JSON is YAML, as Clusternet's YAMLToJSON reads it
    except DecodeError as err:
        raise OverrideError(override, f"value is neither JSON nor YAML: {err}") from None


def _apply_one(override: SourcedOverride, value: Any, generic: Any, chart: Any) -> tuple[Any, Any]:
    kind = override.config.type
    if kind == OverrideType.HELM:
        if override.config.override_chart:
            return generic, merge_patch(chart, value)
        return _helm_values(override, generic, value), chart
    if kind == OverrideType.JSON_PATCH:
        return json_patch(override, generic, value), chart
    if kind == OverrideType.MERGE_PATCH:
        return merge_patch(generic, value), chart
    if kind == OverrideType.FIELD_JSON_PATCH:
        return _field_patch(override, generic, lambda field: json_patch(override, field, value)), chart
    if kind == OverrideType.FIELD_MERGE_PATCH:
        return _field_patch(override, generic, lambda field: merge_patch(field, value)), chart
    raise OverrideError(override, f"unsupported override type {kind}")


def _helm_values(override: SourcedOverride, current: Any, values: Any) -> Any:
    # Helm's CoalesceTables(values, current) on two mappings is a merge patch: later values win,
    # nested tables merge, null removes a key.
    if not isinstance(values, dict) or not isinstance(current, dict):
        raise OverrideError(override, "Helm values must be a mapping")
    return merge_patch(current, values)


def json_patch(override: SourcedOverride, doc: Any, operations: Any) -> Any:
    """RFC 6902 patch; a target path that does not exist leaves `doc` unchanged (as Clusternet)."""
    if doc is None:
        return doc
    patch = _decode_json_patch(override, operations)
    try:
        return patch.apply(doc)
    except (jsonpatch.JsonPatchPathNotFound, JsonPointerException):
        return doc
    except jsonpatch.JsonPatchException as err:
        raise OverrideError(override, f"invalid JSON patch: {err}") from None


def _decode_json_patch(override: SourcedOverride, operations: Any) -> jsonpatch.JsonPatch:
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise OverrideError(override, "a JSON patch must be a list of operations")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise OverrideError(
            override, f"a JSON patch may hold at most {MAX_JSON_PATCH_OPERATIONS} operations, got {len(operations)}"
        )
    for op in operations:
        for member in ("path", "from"):
            pointer = op.get(member)
            if member in op and not (isinstance(pointer, str) and (pointer == "" or pointer.startswith("/"))):
                raise OverrideError(override, f"{member} {pointer!r} is not a JSON pointer (must start with /)")
    try:
        return jsonpatch.JsonPatch(operations)
    except jsonpatch.JsonPatchException as err:
        raise OverrideError(override, f"invalid JSON patch: {err}") from None


def _field_patch(override: SourcedOverride, doc: Any, patch: Callable[[Any], Any]) -> Any:
    """Patches the JSON or YAML text held in the string field at `fieldPath`, in its own format."""
    path = override.config.field_path or ""
    text = _find_field(override, doc, path)
    if not text:
        return doc
    field_format = override.config.field_format
    try:
        if field_format == FieldFormat.JSON:
            field = load_json(text)
        elif field_format == FieldFormat.YAML:
            field = load_yaml(text)
        else:
            raise OverrideError(override, "fieldFormat must be JSON or YAML")
    except DecodeError as err:
        raise OverrideError(override, f"field is not valid {field_format}: {err}") from None
    patched = patch(field)
    if patched == field:
        return doc
    if field_format == FieldFormat.JSON:
        rendered = json.dumps(patched, indent=_FIELD_INDENT, sort_keys=True, ensure_ascii=False)
    else:
        rendered = yaml.safe_dump(patched, sort_keys=True, default_flow_style=False, allow_unicode=True)
    result = copy.deepcopy(doc)
    JsonPointer(path).set(result, rendered)
    return result


def _find_field(override: SourcedOverride, doc: Any, path: str) -> str:
    """Clusternet's findField: the string at JSON pointer `path`; where the walk stops is an error
    naming the place, never echoing the document (a ConfigMap's data may be a secret)."""
    if not path.startswith("/"):
        raise OverrideError(override, "fieldPath must be a JSON pointer starting with /")
    try:
        parts = JsonPointer(path).parts
    except JsonPointerException as err:
        raise OverrideError(override, f"fieldPath is not a JSON pointer: {err}") from None
    current, tokens = doc, path.split("/")[1:]
    for depth, part in enumerate(parts):
        where = "/" + "/".join(tokens[:depth])
        if isinstance(current, dict):
            if part not in current:
                raise OverrideError(override, f"field not found: no member {part!r} in the object at {where}")
            current = current[part]
        elif isinstance(current, list):
            if not _ARRAY_INDEX.fullmatch(part):
                raise OverrideError(override, f"field not found: {part!r} is not an index of the array at {where}")
            if int(part) >= len(current):
                raise OverrideError(
                    override,
                    f"field not found: index {part} is past the end of the array at {where} ({len(current)} items)",
                )
            current = current[int(part)]
        else:
            raise OverrideError(override, f"field not found: {_json_type(current)} at {where} has no member {part!r}")
    if not isinstance(current, str):
        raise OverrideError(override, f"field is {_json_type(current)}, not a string")
    return current


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"

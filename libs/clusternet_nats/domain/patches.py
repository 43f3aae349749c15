"""JSON merge patch (RFC 7386), shared by the deployer's overrides and the hub's PATCH, and
kubectl's strategic merge patch, shared by the hub's shadow API and the sim's API server."""

from __future__ import annotations

import copy
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """A mapping merges key by key, null removes a key, anything else replaces (copied)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


_MERGE_KEYS = ("name", "mountPath", "containerPort", "port", "ip", "devicePath", "type")
"""The merge keys of Kubernetes' keyed lists (containers, env, volumes by name; volumeMounts by
mountPath; ports by containerPort or port; ...), guessed from the items since neither the hub nor
the sim has Go types to read them from."""
_ORDER, _DELETE_FROM = "$setElementOrder/", "$deleteFromPrimitiveList/"


def _merge_key(items: list[Any]) -> str | None:
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    return next((key for key in _MERGE_KEYS if all(key in item for item in items)), None)


def strategic_merge(current: Any, patch: Any) -> Any:
    """A strategic merge patch as kubectl's client-side apply sends it for built-in kinds: maps
    merge (null deletes), lists of objects merge by their merge key (`$patch: delete` removes an
    item, `$setElementOrder/<field>` orders them), `$deleteFromPrimitiveList/<field>` removes
    values, `$patch: replace` replaces; other lists are replaced. Merge keys are guessed
    (`_MERGE_KEYS`), where kube-apiserver reads them from the Go types."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    result = dict(current) if isinstance(current, dict) else {}
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            field = key.removeprefix(_DELETE_FROM)
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif key.startswith("$"):
            continue
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list) and _merge_key(value) and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, patch.get(_ORDER + key))
        else:
            result[key] = strategic_merge(result.get(key), value)
    for key, order in patch.items():
        if key.startswith(_ORDER) and key.removeprefix(_ORDER) not in patch:
            field = key.removeprefix(_ORDER)
            result[field] = _merge_list(result.get(field) or [], [], order)
    return result


def _merge_list(current: list[Any], patch: list[Any], order: list[Any] | None) -> list[Any]:
    key = _merge_key(patch) or _merge_key(order or []) or _merge_key(current)
    if key is None:
        return copy.deepcopy(patch)
    merged = {item.get(key): item for item in current if isinstance(item, dict)}
    for item in patch:
        if item.get("$patch") == "delete":
            merged.pop(item[key], None)
        else:
            merged[item[key]] = strategic_merge(merged.get(item[key]), item)
    if order is None:
        return list(merged.values())
    ranks = {entry.get(key): i for i, entry in enumerate(order) if isinstance(entry, dict)}
    return sorted(merged.values(), key=lambda item: ranks.get(item.get(key), len(ranks)))

"""Server-side apply (`application/apply-patch+yaml`): the subset of Kubernetes' field ownership
that `kubectl apply --server-side` needs, recorded in `metadata.managedFields` (FieldsV1).

* A field is owned per leaf path: scalars, atomic lists and empty maps are leaves; maps are
  walked. A list of objects that all carry `name` is a map keyed by name (what Kubernetes'
  `listType=map` with `listMapKey=name` means; our kinds' named lists are all of that kind), its
  items merged and owned by key (`k:{"name":"x"}`); every other list is atomic.
* Applying sets the applied fields; fields this manager applied before and applies no more are
  removed unless another manager owns them too (an emptied map or keyed item goes with them).
* Another manager owning an applied field with a different value is a conflict: 409 naming every
  field and manager, as kube-apiserver words it, unless `force=true`, which takes the field over.
  Equal values are shared ownership.
* Only Apply operations record ownership; writes by PUT or merge/JSON patch keep managedFields as
  they are (Kubernetes would add an Update entry for them). `status` is never applied here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from clusternet_nats.api import KindInfo
from clusternet_nats.hub.bodies import agree_with_path, decode, dry_run, parse, within_limits
from clusternet_nats.hub.errors import ApiError, bad_request
from clusternet_nats.hub.watch import spec_revision
from clusternet_nats.hub.writes import Writer, Written

Path = tuple[str, ...]
_MISSING = object()
_NOT_APPLIED = {"apiVersion", "kind", "status"}
_SERVER_METADATA = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")
_RETRIES = 16


def _keyed(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) and "name" in i for i in value)


def _item_key(item: dict[str, Any]) -> str:
    return "k:" + json.dumps({"name": item["name"]}, separators=(",", ":"))


def leaves(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every leaf path of an applied configuration."""
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from leaves(child, (*prefix, "f:" + key))
    elif _keyed(value):
        for item in value:
            for key, child in item.items():
                yield from leaves(child, (*prefix, _item_key(item), "f:" + key))
    else:
        yield prefix


def _child(value: Any, step: str) -> Any:
    if step.startswith("f:") and isinstance(value, dict):
        return value.get(step[2:], _MISSING)
    if step.startswith("k:") and isinstance(value, list):
        if not _keyed(value):
            return _MISSING
        return next((i for i in value if _item_key(i) == step), _MISSING)
    return _MISSING


def _key_field_last(path: Path) -> tuple[bool, Path]:
    """Removal order: an item's `name` after its other fields, since the item is found by it."""
    return (len(path) > 1 and path[-1] == "f:name" and path[-2].startswith("k:"), path)


def value_at(doc: Any, path: Path) -> Any:
    for step in path:
        doc = _child(doc, step)
        if doc is _MISSING:
            break
    return doc


def remove(doc: dict[str, Any], path: Path) -> None:
    """Removes the leaf at `path`, and every map or keyed item it leaves empty."""
    parents: list[Any] = [doc]
    for step in path[:-1]:
        child = _child(parents[-1], step)
        if child is _MISSING:
            return
        parents.append(child)
    for depth in range(len(path) - 1, -1, -1):
        container, step = parents[depth], path[depth]
        if step.startswith("f:") and isinstance(container, dict):
            container.pop(step[2:], None)
        elif isinstance(container, list) and depth + 1 < len(parents):
            item = parents[depth + 1]  # by identity: an emptied item has no key left
            container[:] = [i for i in container if i is not item]
        if depth == 0 or container:  # stop at the first container that still holds something
            break


def merge(current: Any, applied: Any) -> Any:
    """`applied` over `current`: maps and keyed lists merged, anything else replaced."""
    if isinstance(current, dict) and isinstance(applied, dict):
        out = dict(current)
        for key, value in applied.items():
            out[key] = merge(current.get(key, _MISSING), value)
        return out
    if _keyed(applied) and (_keyed(current) or current == []):
        out_items: list[Any] = list(current)
        index = {_item_key(item): n for n, item in enumerate(out_items)}
        for item in applied:
            n = index.get(_item_key(item))
            if n is None:
                out_items.append(item)
            else:
                out_items[n] = merge(out_items[n], item)
        return out_items
    return applied


def fields_v1(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for step in path:
            node = node.setdefault(step, {})
    return tree


def paths_of(tree: Any, prefix: Path = ()) -> set[Path]:
    if not isinstance(tree, dict) or not tree:
        return {prefix} if prefix else set()
    out: set[Path] = set()
    for step, child in tree.items():
        if step != ".":
            out |= paths_of(child, (*prefix, step))
    return out


def dotted(path: Path) -> str:
    """`.spec.feeds[name="web"].kind`, as kube-apiserver names a field in a conflict."""
    out = ""
    for step in path:
        if step.startswith("f:"):
            out += "." + step[2:]
        else:
            key = json.loads(step[2:])
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]"
    return out


async def _applied_config(raw: bytes, info: KindInfo, namespace: str | None, name: str) -> dict[str, Any]:
    config = await decode(raw, "the apply patch", yaml=True)
    if not isinstance(config, dict):
        raise bad_request("an apply patch must be a Kubernetes object (a mapping)")
    for field in ("apiVersion", "kind"):
        if not config.get(field):
            raise bad_request("required in an apply patch", field)
    return agree_with_path(config, info, namespace, name)


def _owned_fields(config: dict[str, Any]) -> set[Path]:
    body = {k: v for k, v in config.items() if k not in _NOT_APPLIED}
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        body["metadata"] = {k: v for k, v in metadata.items() if k not in _SERVER_METADATA}
    return {p for p in leaves(body) if p and p != ("f:metadata",)}


def _conflict(conflicts: list[tuple[str, Path]], api_version: str) -> ApiError:
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f'conflict with "{manager}" using {api_version}',
            "field": dotted(p),
        }
        for manager, p in conflicts
    ]
    listed = "\n".join(f'- conflict with "{manager}" using {api_version}: {dotted(p)}' for manager, p in conflicts)
    return ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict(s):\n{listed}", {"causes": causes})


def _managers(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    managed = metadata.get("managedFields") or []
    return [entry for entry in managed if isinstance(entry, dict) and entry.get("manager")]


async def server_side_apply(
    request: web.Request, writer: Writer, info: KindInfo, namespace: str | None, name: str, raw: bytes
) -> Written:
    manager = request.query.get("fieldManager", "")
    if not manager:
        raise bad_request("is required for apply requests", "fieldManager")
    force_text = request.query.get("force", "false").lower()
    if force_text not in ("true", "false", "1", "0"):
        raise bad_request(f"must be true or false, not {force_text!r}", "force")
    force = force_text in ("true", "1")
    config = await _applied_config(raw, info, namespace, name)
    pinned = (config.get("metadata") or {}).get("resourceVersion")
    applied = _owned_fields(config)
    for attempt in range(_RETRIES):
        current = await writer.views.get(info, namespace, name)
        doc = current.to_json_dict() if current is not None else {"metadata": {}}
        doc.pop("status", None)
        metadata = doc.setdefault("metadata", {})
        entries = _managers(metadata)
        mine = next((e for e in entries if e["manager"] == manager and e.get("operation") == "Apply"), None)
        others = [e for e in entries if e is not mine]
        conflicts = [
            (entry["manager"], path)
            for entry in others
            for path in sorted(paths_of(entry.get("fieldsV1")) & applied)
            if value_at(doc, path) != value_at(config, path)
        ]
        if conflicts and not force:
            raise _conflict(conflicts, info.api_version)
        taken = {path for _, path in conflicts}
        still_owned = set().union(*(paths_of(e.get("fieldsV1")) - taken for e in others))
        released = (paths_of(mine.get("fieldsV1")) if mine else set()) - applied - still_owned
        for path in sorted(released, key=_key_field_last):
            remove(doc, path)
        doc = within_limits(merge(doc, {k: v for k, v in config.items() if k != "status"}), "the applied object")
        kept = []
        for entry in others:
            left = paths_of(entry.get("fieldsV1")) - taken
            if left:
                kept.append({**entry, "fieldsV1": fields_v1(left)})
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        own = {"manager": manager, "operation": "Apply", "apiVersion": info.api_version, "time": now}
        doc["metadata"]["managedFields"] = [*kept, {**own, "fieldsType": "FieldsV1", "fieldsV1": fields_v1(applied)}]
        obj = parse(agree_with_path(doc, info, namespace, name))
        if current is None:
            if pinned:
                raise bad_request("must not be set to create an object by apply", "metadata.resourceVersion")
            try:
                return await writer.create(info, obj, dry_run(request))
            except ApiError as err:
                if err.reason != "AlreadyExists" or attempt == _RETRIES - 1:
                    raise
                continue
        obj.metadata.resource_version = spec_revision(pinned) if pinned else current.metadata.resource_version
        try:
            return await writer.replace(info, obj, dry_run(request))
        except ApiError as err:
            if err.reason != "Conflict" or pinned or attempt == _RETRIES - 1:
                raise
    raise AssertionError("unreachable")

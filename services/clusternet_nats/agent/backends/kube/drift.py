"""What of an object the agent manages, read from the API server's own field ownership.

Server-side apply records, in `metadata.managedFields`, which fields each manager owns. The
agent's entry (manager `clusternet-agent`, operation Apply) is exactly the set of fields its
manifest carried: defaulted fields, fields another controller set (an HPA's replicas once a
Localization removed them from the manifest) and status are not in it. When someone else
changes one of those fields (`kubectl edit`, a merge patch, another manager's forced apply),
the API server moves the field to that manager, so the agent's entry loses it; when the object
is deleted, the entry goes with it. So the part of the object the agent's entry covers, values
included, changes exactly when the agent's desired state was overridden: that is drift, and
nothing else is (no re-apply loop on defaulting or on other managers' writes).

`fieldsV1` is the API server's field set: `f:<name>` a field of a map, `k:<json>` the item of
an associative list with those key values, `v:<json>` a set item, `i:<n>` an atomic list's
item, `.` the node itself besides its children.
"""

from __future__ import annotations

import json
from typing import Any

from clusternet_nats.agent.backends.kube.applier import FIELD_MANAGER
from clusternet_nats.kube.rest import Json

FieldSet = dict[str, Any]


def applied_fields(obj: Json) -> FieldSet | None:
    """The field set of the agent's own apply on `obj` (not a status subresource's), if any."""
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if (
            entry.get("manager") == FIELD_MANAGER
            and entry.get("operation") == "Apply"
            and not entry.get("subresource")
            and entry.get("fieldsType", "FieldsV1") == "FieldsV1"
        ):
            fields = entry.get("fieldsV1")
            return fields if isinstance(fields, dict) else {}
    return None


def _item(items: list[Any], token: str) -> tuple[bool, Any]:
    """The list item a `k:`/`v:`/`i:` token names: (found, item)."""
    kind, _, raw = token.partition(":")
    if kind == "i":
        index = int(raw)
        return (True, items[index]) if 0 <= index < len(items) else (False, None)
    wanted = json.loads(raw)
    for item in items:
        if kind == "v" and item == wanted:
            return True, item
        if kind == "k" and isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items()):
            return True, item
    return False, None


def project(value: Any, fields: FieldSet) -> Any:
    """The part of `value` that `fields` covers; a leaf (no children) is taken whole."""
    children = {token: sub for token, sub in fields.items() if token != "."}
    if not children:
        return value
    projected: dict[str, Any] = {}
    for token, sub in children.items():
        if token.startswith("f:") and isinstance(value, dict):
            name = token[2:]
            if name in value:
                projected[token] = project(value[name], sub)
        elif token[:2] in ("k:", "v:", "i:") and isinstance(value, list):
            found, item = _item(value, token)
            if found:
                projected[token] = project(item, sub)
    return projected


def applied_view(obj: Json) -> Any:
    """What of `obj` the agent manages, with the values it has now; None when it manages nothing."""
    fields = applied_fields(obj)
    return None if fields is None else project(obj, fields)

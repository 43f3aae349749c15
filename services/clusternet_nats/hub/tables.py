"""`Table` answers (meta.k8s.io v1 and v1beta1), so `kubectl get` prints what `cnet get` prints.

kubectl asks for a Table in its Accept header and prints the server's columns as they come. The
columns are cnet's (`api.printer_columns.columns_for`, the CRDs' printer columns plus cnet's additions),
so the two tools cannot differ; columns cnet shows only with `-o wide` have priority 1, which
kubectl likewise shows only with `-o wide`. Ages are rendered here, as kube-apiserver renders a
CRD's date columns. Any other kind (the shadow API's) gets NAME and AGE.

A middleware rewrites a GET's JSON answer (an object or a list) into a Table when one was asked
for, so every route that reads objects answers Tables without knowing of them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from clusternet_nats.api import UnknownKindError, by_kind
from clusternet_nats.api.printer_columns import Column, age, columns_for
from clusternet_nats.hub.errors import bad_request

Object = dict[str, Any]
TABLE_VERSIONS = ("v1", "v1beta1")
_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE = Column("AGE", lambda obj, now: age((obj.get("metadata") or {}).get("creationTimestamp"), now))


def table_version(accept: str) -> str | None:
    """The meta.k8s.io version of the first Table the Accept header asks for, None if none."""
    for media in accept.split(","):
        kind, *params = (p.strip() for p in media.split(";"))
        values = dict(p.partition("=")[::2] for p in params)
        table = values.get("as") == "Table" and values.get("g") == "meta.k8s.io"
        if kind in ("application/json", "*/*") and table and values.get("v") in TABLE_VERSIONS:
            return values["v"]
    return None


def _columns(kind: str) -> list[Column]:
    try:
        by_kind(kind)
    except UnknownKindError:
        return [_AGE]
    return columns_for(kind, wide=True)


INCLUDE_OBJECT = ("None", "Metadata", "Object")
"""`?includeObject=`: what each row carries besides its cells (kubectl asks for Object to sort)."""


def _row_object(obj: Object, version: str, include: str) -> Object | None:
    if include == "Object":
        return obj
    if include == "None":
        return None
    metadata = obj.get("metadata") or {}
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}", "metadata": metadata}


def table(body: Object, version: str, now: datetime | None = None, include: str = "Metadata") -> Object:
    """The Table of a list (`items`) or of one object, in meta.k8s.io `version`; rows carry what
    `include` (INCLUDE_OBJECT) says of their object."""
    listed = "items" in body and isinstance(body["items"], list)
    objects: list[Object] = body["items"] if listed else [body]
    kind = str(body.get("kind", ""))
    item_kind = kind.removesuffix("List") if listed and kind != "List" else None
    kinds = {item_kind} if item_kind else {str(o.get("kind", "")) for o in objects}
    columns = _columns(kinds.pop()) if len(kinds) == 1 else [_AGE]
    when = now or datetime.now(UTC)
    name = {"name": "Name", "type": "string", "format": "name", "description": _NAME_DESCRIPTION, "priority": 0}
    definitions = [name] + [
        {"name": c.header, "type": "string", "format": "", "description": "", "priority": 1 if c.wide_only else 0}
        for c in columns
    ]
    rows = []
    for o in objects:
        row: Object = {"cells": [(o.get("metadata") or {}).get("name", ""), *(c.value(o, when) for c in columns)]}
        carried = _row_object(o, version, include)
        rows.append(row if carried is None else {**row, "object": carried})
    metadata = {k: v for k, v in (body.get("metadata") or {}).items() if k in ("resourceVersion", "continue")}
    metadata = metadata if listed else {"resourceVersion": (body.get("metadata") or {}).get("resourceVersion", "")}
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    }


@web.middleware
async def tables(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turns a GET's JSON object or list into a Table when the client asked for one."""
    response = await handler(request)
    version = table_version(request.headers.get("Accept", "")) if request.method == "GET" else None
    if (
        version is None
        or type(response) is not web.Response
        or response.status != 200
        or response.content_type != "application/json"
        or not isinstance(response.body, bytes)
    ):
        return response
    body = json.loads(response.body)
    if not isinstance(body, dict) or body.get("kind") in (None, "Status", "Table") or "metadata" not in body:
        return response
    include = request.query.get("includeObject", "Metadata")
    if include not in INCLUDE_OBJECT:
        raise bad_request(f"{include!r}: supported values: {', '.join(INCLUDE_OBJECT)}", "includeObject")
    return web.json_response(table(body, version, include=include))

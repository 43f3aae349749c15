"""`/api/v1/events`: the Events stream read the way `kubectl get events` reads it.

One object's events (kind, name and namespace known) are one subject on the stream; anything
broader reads the kind's (or every) subject and filters here, since events are bounded per
object and by age.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from clusternet_nats.api import Event
from clusternet_nats.hub.errors import bad_request
from clusternet_nats.hub.selectors import parse_field_selector
from clusternet_nats.store import list_events
from nats.js import JetStreamContext

_FIELDS: dict[str, Callable[[Event], str | None]] = {
    "involvedObject.kind": lambda e: e.involved_object.kind,
    "involvedObject.name": lambda e: e.involved_object.name,
    "involvedObject.namespace": lambda e: e.involved_object.namespace,
    "involvedObject.uid": lambda e: e.involved_object.uid,
    "metadata.namespace": lambda e: e.metadata.namespace,
    "reason": lambda e: e.reason,
    "type": lambda e: e.type.value,
}


class Events:
    def __init__(self, js: JetStreamContext) -> None:
        self.js = js

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/events", self.list)
        app.router.add_get("/api/v1/namespaces/{namespace}/events", self.list)

    async def list(self, request: web.Request) -> web.Response:
        try:
            fields = parse_field_selector(request.query.get("fieldSelector", ""), frozenset(_FIELDS))
        except ValueError as err:
            raise bad_request(str(err), "fieldSelector") from None
        if "namespace" in request.match_info:
            fields["metadata.namespace"] = request.match_info["namespace"]
        kind, name = fields.get("involvedObject.kind"), fields.get("involvedObject.name")
        namespace = fields.get("involvedObject.namespace") or fields.get("metadata.namespace")
        if kind and name and namespace:
            events = await list_events(self.js, kind, namespace, name)
        else:
            events = await list_events(self.js, kind)
        items = [e.to_json_dict() for e in events if all(_FIELDS[f](e) == v for f, v in fields.items())]
        return web.json_response({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": items})

"""The sim's etcd: objects by (apiVersion, kind, namespace, name), stamped as an API server would.

Writing sets uid and creationTimestamp on create, bumps generation only when the spec changes
and resourceVersion only when anything changes, so an apply that changes nothing is invisible,
exactly the property level-triggered reconcilers need to settle. Each object also keeps the
order it was created in, which the sim schedules workloads by. resourceVersions come from one
counter per table, as etcd's revision is one per cluster: an object's is the revision that last
wrote it, the table's (`revision`) the latest, which a list reports and a watch resumes from.
Listeners (`on_change`) hear every change as a watch would, so the sim's API server can stream
them and the agent can notice a change made in the child behind its back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.api.meta import utcnow

Body = dict[str, Any]
_NOT_SPEC = ("apiVersion", "kind", "metadata", "status")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


@dataclass
class SimObject:
    ref: ObjectRef
    body: Body
    created: int
    """Creation order in this cluster (a counter), the order workloads are scheduled in."""

    @property
    def owner(self) -> str | None:
        labels: dict[str, str] = self.body.get("metadata", {}).get("labels") or {}
        return labels.get(APPLIED_BY_DESCRIPTION)

    @property
    def generation(self) -> int:
        return int(self.body["metadata"].get("generation", 1))


def json_copy(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, immutable leaves), several times cheaper than
    copy.deepcopy, which the sim would otherwise spend more on than on anything else it does."""
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_copy(item) for item in value]
    return value


def spec_of(body: Body) -> Body:
    return {k: v for k, v in body.items() if k not in _NOT_SPEC}


def _meta_without_system_fields(body: Body) -> Body:
    meta = dict(body.get("metadata") or {})
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        meta.pop(key, None)
    return meta


ChangeListener = Callable[[str, "SimObject"], None]
"""Called after each change with ADDED, MODIFIED or DELETED and the object as it now is (for
DELETED its last state, stamped with the deletion's revision). The object is the table's own,
later changed in place: a listener that keeps it copies it."""


class ObjectTable:
    def __init__(self) -> None:
        self._objects: dict[ObjectRef, SimObject] = {}
        self._revision = 0
        self._created = 0
        self._listeners: list[ChangeListener] = []

    @property
    def revision(self) -> int:
        """The table's resourceVersion: the revision of its latest change (deletes included)."""
        return self._revision

    def on_change(self, listener: Callable[[str, SimObject], None]) -> None:
        self._listeners.append(listener)

    def _emit(self, event: str, obj: SimObject) -> None:
        for listener in self._listeners:
            listener(event, obj)

    def get(self, ref: ObjectRef) -> SimObject | None:
        return self._objects.get(ref)

    def __iter__(self) -> Iterator[SimObject]:
        return iter(list(self._objects.values()))

    def put(self, ref: ObjectRef, body: Body, owned: bool = False) -> bool:
        """Creates or replaces (status kept unless `body` has one); True when anything changed.
        `owned`: the caller hands `body` over (a fresh copy nobody else keeps), stored as it is;
        otherwise the table stores a copy."""
        current = self._objects.get(ref)
        body = body if owned else json_copy(body)
        if current is None:
            self._created += 1
            meta = body.setdefault("metadata", {})
            meta.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=utcnow().isoformat())
            self._objects[ref] = SimObject(ref, body, self._created)
            self._stamp(self._objects[ref])
            self._emit(ADDED, self._objects[ref])
            return True
        if "status" not in body and "status" in current.body:
            body["status"] = current.body["status"]
        same_meta = _meta_without_system_fields(body) == _meta_without_system_fields(current.body)
        if same_meta and body.get("status") == current.body.get("status") and spec_of(body) == spec_of(current.body):
            return False
        meta = body.setdefault("metadata", {})
        old = current.body["metadata"]
        meta.update(uid=old["uid"], creationTimestamp=old["creationTimestamp"], generation=current.generation)
        if spec_of(body) != spec_of(current.body):
            meta["generation"] = current.generation + 1
        current.body = body
        self._stamp(current)
        self._emit(MODIFIED, current)
        return True

    def set_status(self, ref: ObjectRef, status: Body) -> bool:
        """What a controller's status update does; True when the status changed."""
        obj = self._objects[ref]
        if obj.body.get("status") == status:
            return False
        obj.body["status"] = status
        self._stamp(obj)
        self._emit(MODIFIED, obj)
        return True

    def delete(self, ref: ObjectRef) -> SimObject | None:
        obj = self._objects.pop(ref, None)
        if obj is not None:
            self._stamp(obj)
            self._emit(DELETED, obj)
        return obj

    def _stamp(self, obj: SimObject) -> None:
        self._revision += 1
        obj.body["metadata"]["resourceVersion"] = str(self._revision)

    # -- persistence ------------------------------------------------------------------------

    def snapshot(self) -> Body:
        """The table as plain data sharing the table's bodies: serialize it before the next change."""
        objects = [
            {"ref": [o.ref.api_version, o.ref.kind, o.ref.namespace, o.ref.name], "created": o.created, "body": o.body}
            for o in sorted(self._objects.values(), key=lambda o: o.created)
        ]
        return {"revision": self._revision, "created": self._created, "objects": objects}

    def restore(self, state: Body) -> None:
        """Loads a snapshot at start, before anyone listens: no events."""
        self._revision, self._created = int(state["revision"]), int(state["created"])
        self._objects = {}
        for item in state["objects"]:
            ref = ObjectRef(*item["ref"])
            self._objects[ref] = SimObject(ref, item["body"], int(item["created"]))

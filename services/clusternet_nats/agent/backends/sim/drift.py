"""What the agent applied to a simulated cluster, so that a change made in the child behind its
back (through the sim's API server, or its store) is noticed and put back, as on a real cluster.

The sim has no managedFields, so it keeps what server-side apply keeps for the agent: the fields
of each object the agent last applied (the admitted manifest). Those fields are the agent's:

* drift is any of them changed or missing, or the object deleted; fields the manifest does not
  carry (replicas an HPA-like writer set once a Localization removed them from the manifest,
  status) are someone else's and never drift;
* an apply writes the agent's fields over the object as it is, and removes the fields the agent
  applied before and no longer does, leaving everyone else's alone, so re-applying an unchanged
  manifest writes nothing (no new resourceVersion, no loop).

What was applied is kept with the cluster's state file, so a restarted agent still knows which
fields are its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim.store import DELETED, Body, ObjectTable, SimObject, json_copy
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION

Identity = tuple[str, str]
"""uid and resourceVersion: an apply that leaves an object with the same changed nothing."""

log = structlog.get_logger(__name__)


def _identity(body: Body) -> Identity:
    meta = body.get("metadata") or {}
    return str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))


def covers(live: Any, applied: Any) -> bool:
    """Whether `live` still holds every field of `applied` with its value (maps field by field,
    anything else whole)."""
    if isinstance(applied, dict) and isinstance(live, dict):
        return all(key in live and covers(live[key], value) for key, value in applied.items())
    return bool(live == applied)


def _drop(live: Body, previous: Body, desired: Body) -> None:
    """Removes from `live` the fields `previous` applied that `desired` no longer carries."""
    for key, value in previous.items():
        if key not in desired:
            live.pop(key, None)
        elif isinstance(value, dict) and isinstance(desired[key], dict) and isinstance(live.get(key), dict):
            _drop(live[key], value, desired[key])


def _overlay(live: Body, desired: Body) -> None:
    for key, value in desired.items():
        if isinstance(value, dict) and isinstance(live.get(key), dict):
            _overlay(live[key], value)
        else:
            live[key] = json_copy(value)


def merged(live: Body, previous: Body | None, desired: Body) -> Body:
    """What a server-side apply of `desired` makes of `live`, `previous` being the last apply."""
    body: Body = json_copy(live)
    if previous is not None:
        _drop(body, previous, desired)
    _overlay(body, desired)
    return body


def _without_status(body: Body) -> Body:
    return {key: value for key, value in body.items() if key != "status"}


def _owner(body: Body) -> str | None:
    owner = ((body.get("metadata") or {}).get("labels") or {}).get(APPLIED_BY_DESCRIPTION)
    return owner if isinstance(owner, str) else None


class AppliedObjects:
    """Per object the agent applied: its fields as applied, and whether it drifted since."""

    def __init__(self, notify: Callable[[str], None], cluster: str) -> None:
        self._notify = notify
        self._applied: dict[ObjectRef, Body] = {}
        self._drifted: dict[ObjectRef, Identity] = {}
        self._covered: dict[ObjectRef, Body] = {}
        """Per object, its body when last found holding everything applied. The table replaces an
        object's body on every write but a status update (made in place, and status is never
        drift), so a change event for that same body needs no second look."""
        self._writing: ObjectRef | None = None
        """The object an apply is storing now (`write`): its write is the agent's own, made of
        what it applied, so it holds every applied field."""
        self._log = log.bind(cluster=cluster)

    def write(self, objects: ObjectTable, ref: ObjectRef, desired: Body) -> tuple[bool, bool]:
        """Stores an apply of `desired` (the admitted body, the caller's own, kept as it is) over
        the object as it is (see `merged`); remembers `desired` as applied, first, so its own
        write is not taken for drift. Returns whether that changed the object, and whether it put
        back a drifted one."""
        live = objects.get(ref)
        previous = self._applied.get(ref)
        self._applied[ref] = desired
        self._writing = ref
        try:
            if live is None:
                changed = objects.put(ref, desired)
            else:
                changed = objects.put(ref, merged(live.body, previous, desired), owned=True)
        finally:
            self._writing = None
        stored = objects.get(ref)
        assert stored is not None
        self._covered[ref] = stored.body
        drifted = self._drifted.pop(ref, None)
        return changed, drifted is not None and _identity(stored.body) != drifted

    def forget(self, ref: ObjectRef) -> None:
        """Before the agent deletes or disowns `ref` itself: its going is no drift."""
        self._applied.pop(ref, None)
        self._drifted.pop(ref, None)
        self._covered.pop(ref, None)

    def heard(self, event: str, obj: SimObject) -> None:
        """The table's change listener: marks drift and tells the object's owner."""
        applied = self._applied.get(obj.ref)
        if applied is None:
            return
        if event != DELETED:
            if obj.ref == self._writing or self._covered.get(obj.ref) is obj.body:
                return
            if covers(_without_status(obj.body), _without_status(applied)):
                self._covered[obj.ref] = obj.body
                return
        self._covered.pop(obj.ref, None)
        self._drifted[obj.ref] = _identity(obj.body)
        self._log.info("drift.deleted" if event == DELETED else "drift.changed", object=str(obj.ref))
        owner = _owner(applied)
        if owner:
            self._notify(owner)

    # -- persistence ------------------------------------------------------------------------

    def snapshot(self) -> list[Any]:
        """What was applied, sharing the bodies kept: serialize it before the next change."""
        return [[[r.api_version, r.kind, r.namespace, r.name], b] for r, b in self._applied.items()]

    def restore(self, state: list[Any]) -> None:
        self._applied = {ObjectRef(*ref): body for ref, body in state}

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

import copy
from collections.abc import Callable
from typing import Any

import structlog
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim.store import DELETED, Body, SimObject
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
            live[key] = copy.deepcopy(value)


def merged(live: Body, previous: Body | None, desired: Body) -> Body:
    """What a server-side apply of `desired` makes of `live`, `previous` being the last apply."""
    body = copy.deepcopy(live)
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
        self._log = log.bind(cluster=cluster)

    def to_store(self, ref: ObjectRef, desired: Body, live: SimObject | None) -> Body:
        """The body an apply of `desired` stores (see `merged`); remembers `desired` as applied,
        first, so the write it is for is not taken for drift. `desired` is the admitted body, the
        caller's own (the table stores a copy), so it is kept as it is."""
        previous = self._applied.get(ref)
        self._applied[ref] = desired
        return desired if live is None else merged(live.body, previous, desired)

    def stored(self, ref: ObjectRef, obj: SimObject) -> bool:
        """After the apply of `ref` stored `obj`: True when that put back a drifted object."""
        drifted = self._drifted.pop(ref, None)
        return drifted is not None and _identity(obj.body) != drifted

    def forget(self, ref: ObjectRef) -> None:
        """Before the agent deletes or disowns `ref` itself: its going is no drift."""
        self._applied.pop(ref, None)
        self._drifted.pop(ref, None)

    def heard(self, event: str, obj: SimObject) -> None:
        """The table's change listener: marks drift and tells the object's owner."""
        applied = self._applied.get(obj.ref)
        if applied is None:
            return
        if event != DELETED and covers(_without_status(obj.body), _without_status(applied)):
            return
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

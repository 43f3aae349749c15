"""A Kubernetes-style core/v1 Event: the human-readable story of what controllers did and why.

Not a Clusternet kind but our own wire object, shaped like core/v1 so `cnet describe` can print
events the way `kubectl describe` does and people read them without learning a new format.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from clusternet_nats.api.meta import Int32, KubeObject, Model, utcnow
from pydantic import Field


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class ObjectReference(Model):
    """The object an Event is about."""

    kind: str
    name: str
    api_version: str | None = None
    namespace: str | None = None
    uid: str | None = None


class EventSource(Model):
    component: str | None = None


class Event(KubeObject):
    KIND = "Event"
    VERSION = "v1"
    PLURAL = "events"

    involved_object: ObjectReference
    reason: str
    message: str
    type: EventType = EventType.NORMAL
    source: EventSource = Field(default_factory=EventSource)
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    count: Int32 = 1
    reporting_component: str | None = None

    @classmethod
    def about(
        cls, involved: ObjectReference, type_: str, reason: str, message: str, component: str, count: int = 1
    ) -> Event:
        """A new Event (stamped now, uniquely named) about `involved`, standing for `count` occurrences."""
        now = utcnow()
        return cls.model_validate(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{involved.name}.{uuid.uuid4().hex[:16]}",
                    "namespace": involved.namespace or "default",
                },
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "type": type_,
                "source": {"component": component},
                "reportingComponent": component,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": count,
            }
        )


__all__ = ["Event", "EventSource", "EventType", "ObjectReference"]

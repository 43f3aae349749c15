"""Kubernetes-style Events for humans, on a stream keyed by the object they are about.

Subjects are `events.<Kind>.<namespace or _>.<name>`, so `cnet describe` reads one object's
events with one subject filter, and `nats sub 'events.>'` shows the whole system's story live.
Recording is best-effort: losing an Event never fails a reconcile. A fleet's worth of Events
(a rollout announces a Base and a Description per cluster) goes out with `record_all`, in flight
together like the writes they announce, not one awaited publish each; and, as Kubernetes' event
aggregator does, many similar ones about one object (a Base created for each of 10,000 clusters,
each on the Subscription) go out as a few and one that counts the rest, not as 10,000 lines of
`cnet describe`, of which the stream would keep the last 200 anyway.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import structlog
from clusternet_nats.api.events import Event, ObjectReference
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.subjects import EVENTS
from clusternet_nats.store.breathe import breathe
from clusternet_nats.store.buckets import EVENTS_STREAM
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.store.keys import object_key
from clusternet_nats.store.kv import CONTENT_TYPE, JSON_CONTENT_TYPE, publish_pipelined
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

log = structlog.get_logger(__name__)

SIMILAR_EVENTS = 10
"""Kubernetes' event aggregator's limit (client-go tools/record, maxEvents): of more Events than this
recorded together about one object with one type and reason, the first SIMILAR_EVENTS - 1 go out
as they are and the rest as one, `COMBINED` and the last one's message, counting them."""
COMBINED = "(combined from similar events): "

Announcement = tuple[KubeObject, str, str, str]
"""(object, type, reason, message) of one Event to record."""


def fold_similar(events: Sequence[Announcement]) -> list[tuple[Announcement, int]]:
    """`events` in order, each with its count 1, but for the similar ones past `SIMILAR_EVENTS`
    (same object, type and reason), which are one, where the last of them was, with their count."""

    def similar(event: Announcement) -> tuple[object, ...]:
        obj, type_, reason, _ = event
        return obj.kind, obj.metadata.namespace, obj.name, obj.metadata.uid, type_, reason

    totals = Counter(similar(event) for event in events)
    seen: Counter[tuple[object, ...]] = Counter()
    out: list[tuple[Announcement, int]] = []
    for event in events:
        key = similar(event)
        seen[key] += 1
        if totals[key] <= SIMILAR_EVENTS or seen[key] < SIMILAR_EVENTS:
            out.append((event, 1))
        elif seen[key] == totals[key]:
            obj, type_, reason, message = event
            out.append(((obj, type_, reason, COMBINED + message), totals[key] - SIMILAR_EVENTS + 1))
    return out


def event_subject(kind: str, namespace: str | None, name: str) -> str:
    return EVENTS.format(kind=kind, scope=namespace or "_", key=object_key(None, name))


class EventRecorder:
    """Publishes Events; a registered cluster's go through the hub's intake (store/intake.py)."""

    def __init__(self, js: JetStreamContext, component: str, intake: IntakeClient | None = None) -> None:
        self.js = js
        self.component = component
        self.intake = intake

    def _event(self, obj: KubeObject, type_: str, reason: str, message: str, count: int = 1) -> Event:
        involved = ObjectReference(
            api_version=obj.api_version,
            kind=obj.kind,
            namespace=obj.metadata.namespace,
            name=obj.name,
            uid=obj.metadata.uid,
        )
        return Event.about(involved, type_, reason, message, self.component, count)

    async def record(self, obj: KubeObject, type_: str, reason: str, message: str) -> None:
        await self._record(obj, self._event(obj, type_, reason, message))

    async def _record(self, obj: KubeObject, event: Event) -> None:
        try:
            if self.intake is not None:
                await self.intake.event(event.to_json())
                return
            await self.js.publish(
                event_subject(obj.kind, obj.metadata.namespace, obj.name),
                event.to_json(),
                headers={CONTENT_TYPE: JSON_CONTENT_TYPE},
            )
        except Exception as err:
            log.warning("event.not_recorded", reason=event.reason, object=obj.namespaced_name(), error=repr(err))

    async def record_all(self, events: Sequence[Announcement]) -> None:
        """Records (object, type, reason, message) each, similar ones folded (`fold_similar`),
        all in flight together; those not stored are logged once, counted, with the first one's
        reason and error."""
        folded = fold_similar(events)
        if self.intake is not None:
            for (obj, type_, reason, message), count in folded:
                await self._record(obj, self._event(obj, type_, reason, message, count))
            return
        headers = {CONTENT_TYPE: JSON_CONTENT_TYPE}
        publishes = []
        for index, ((obj, type_, reason, message), count) in enumerate(folded):
            await breathe(index)  # a fleet's Events are seconds of building on a loaded machine
            subject = event_subject(obj.kind, obj.metadata.namespace, obj.name)
            publishes.append((subject, self._event(obj, type_, reason, message, count).to_json(), headers))
        try:
            outcomes = await publish_pipelined(self.js, publishes)
        except Exception as err:
            outcomes = [err] * len(folded)
        lost = [
            (obj, reason, outcome)
            for ((obj, _, reason, _), _), outcome in zip(folded, outcomes, strict=True)
            if isinstance(outcome, BaseException)
        ]
        if lost:
            obj, reason, error = lost[0]
            log.warning(
                "events.not_recorded", count=len(lost), reason=reason, object=obj.namespaced_name(), error=repr(error)
            )

    async def normal(self, obj: KubeObject, reason: str, message: str) -> None:
        await self.record(obj, "Normal", reason, message)

    async def warning(self, obj: KubeObject, reason: str, message: str) -> None:
        await self.record(obj, "Warning", reason, message)


async def list_events(
    js: JetStreamContext, kind: str | None = None, namespace: str | None = None, name: str | None = None
) -> list[Event]:
    """Stored events, oldest first, for one object or (with Nones) for everything."""
    if kind and name:
        subject = event_subject(kind, namespace, name)
    else:
        subject = EVENTS.filter(kind=kind) if kind else EVENTS.filter()
    config = ConsumerConfig(
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.ALL,
        inactive_threshold=10.0,
        mem_storage=True,
    )
    sub = await js.pull_subscribe(subject, stream=EVENTS_STREAM, config=config)
    events: list[Event] = []
    try:
        pending = (await sub.consumer_info()).num_pending or 0
        while pending > 0:
            msgs = await sub.fetch(min(pending, 1000), timeout=2.0)
            for msg in msgs:
                events.append(Event.model_validate_json(msg.data))
            pending -= len(msgs)
    finally:
        await sub.unsubscribe()
    return events

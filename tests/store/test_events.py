"""Events recorded together (`record_all`, a rollout's announcements) land as `record` lands one:
each on its object's subject, in order, with its reason; one that cannot be stored is counted in
one warning, and never raises."""

from __future__ import annotations

import structlog
import structlog.testing
from clusternet_nats.api.apps import Subscription
from clusternet_nats.store.events import COMBINED, SIMILAR_EVENTS, EventRecorder, fold_similar, list_events
from clusternet_nats.testing.natsserver import NatsServer
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext


def _subscription(ns: str, name: str) -> Subscription:
    return Subscription.new(name, ns, spec={"subscribers": [{"clusterAffinity": {}}], "feeds": []})


async def test_record_all_stores_each_event_on_its_object(js: JetStreamContext, unique_ns: str) -> None:
    recorder = EventRecorder(js, "pytest")
    subs = [_subscription(unique_ns, f"s{i}") for i in range(3)]
    await recorder.record_all([(sub, "Normal", f"Reason{i}", f"message {i}") for i, sub in enumerate(subs)])
    await recorder.record_all([(subs[0], "Warning", "Again", "second")])

    first = await list_events(js, "Subscription", unique_ns, "s0")
    assert [(e.type, e.reason, e.message) for e in first] == [
        ("Normal", "Reason0", "message 0"),
        ("Warning", "Again", "second"),
    ]
    for i in (1, 2):
        (only,) = await list_events(js, "Subscription", unique_ns, f"s{i}")
        assert only.involved_object.name == f"s{i}" and only.source is not None
        assert only.source.component == "pytest"


async def test_record_all_counts_what_it_could_not_store_in_one_warning(nats_server: NatsServer) -> None:
    """Over a closed connection every publish fails: one warning counts them, nothing raises."""
    nc = NATS()
    await nc.connect(nats_server.url)
    await nc.close()
    recorder = EventRecorder(nc.jetstream(), "pytest")
    subs = [_subscription("default", f"s{i}") for i in range(5)]
    with structlog.testing.capture_logs() as logs:
        await recorder.record_all([(sub, "Normal", "Created", "made") for sub in subs])
    lost = [entry for entry in logs if entry["event"] == "events.not_recorded"]
    assert len(lost) == 1 and lost[0]["count"] == 5, logs


async def test_similar_events_past_ten_are_combined_into_one_that_counts_them(
    js: JetStreamContext, unique_ns: str
) -> None:
    """As Kubernetes' event aggregator: 25 Events about one object with one type and reason, recorded
    together, are the first nine as they are and one combined from the other 16; another reason, or
    another object, is not folded with them."""
    recorder = EventRecorder(js, "pytest")
    sub, other = _subscription(unique_ns, "fleet"), _subscription(unique_ns, "alone")
    announced = [(sub, "Normal", "BaseCreated", f"Base c{i} is created successfully") for i in range(25)]
    announced.insert(5, (sub, "Warning", "Failed", "once"))
    announced.insert(7, (other, "Normal", "BaseCreated", "Base x is created successfully"))
    await recorder.record_all(announced)

    events = await list_events(js, "Subscription", unique_ns, "fleet")
    created = [e for e in events if e.reason == "BaseCreated"]
    assert [(e.message, e.count) for e in created] == [
        *((f"Base c{i} is created successfully", 1) for i in range(9)),
        (f"{COMBINED}Base c24 is created successfully", 16),
    ]
    assert sum(e.count for e in created) == 25
    assert [(e.reason, e.count) for e in events if e.reason != "BaseCreated"] == [("Failed", 1)]
    (alone,) = await list_events(js, "Subscription", unique_ns, "alone")
    assert (alone.message, alone.count) == ("Base x is created successfully", 1)


def test_ten_similar_events_are_not_folded() -> None:
    sub = _subscription("default", "s")
    announced = [(sub, "Normal", "BaseCreated", f"m{i}") for i in range(SIMILAR_EVENTS)]
    assert fold_similar(announced) == [(event, 1) for event in announced]

"""Issue 7, what a cluster may store (classes 2, 5 and 6 at the hub's door): writes that must be
refused, whichever path A takes (a publish into the stream, the domain path, the intake).

A key outside A's namespace, a Description status with no Description behind it, a bucket
clusters do not write (the hub's credentials and tokens among them), a body that does not
validate, an Event about B's objects or an oversized Event: each is refused or unanswered, and
the hub's view shows nothing stored. The positive control is A's valid write of its own
Description's status, which lands.
"""

from __future__ import annotations

import asyncio
import json

from clusternet_nats.api.events import Event, ObjectReference

from tests.isolation.attackers import (
    Attacker,
    put_description,
    record,
    seed_records,
    stream_messages,
    unchanged,
)
from tests.registration.harness import RegistrationHub


def refused(answers: list[object]) -> bool:
    """No answer accepted the write: a JetStream pub ack or an intake revision would have."""
    for answer in answers:
        if isinstance(answer, dict) and not answer.get("error") and not answer.get("code"):
            return False
    return True


async def test_invalid_writes_are_refused_and_store_nothing(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    await put_description(hub, attacker.namespace, "app", "a-app")
    seeded = await seed_records(hub, bystander.namespace)
    credential = await record(hub, "clustercredentials", bystander.cluster_id)
    assert credential is not None

    ok = await attacker.store("descriptions-status", f"{attacker.namespace}.app", b'{"phase":"Success"}')
    assert not refused(ok), f"positive control: A's valid status write lands: {ok}"
    assert await record(hub, "descriptions-status", f"{attacker.namespace}.app") is not None

    stolen = json.loads(credential[0])
    stolen["secretHash" if "secretHash" in stolen else "secret_hash"] = "0" * 64
    attempts = {
        "B's key": ("descriptions-status", f"{bystander.namespace}.precious", b'{"phase":"Failure"}'),
        "no Description behind": ("descriptions-status", f"{attacker.namespace}.ghost", b'{"phase":"Success"}'),
        "invalid body": ("managedclusters-status", f"{attacker.namespace}.junk", b'{"bogus": 1}'),
        "not JSON": ("node-inventories", f"{attacker.namespace}.junk", b"\x00\xff not json"),
        "hub credentials": ("clustercredentials", bystander.cluster_id, json.dumps(stolen).encode()),
        "hub tokens": ("bootstraptokens", "abcdef", b'{"tokenId":"abcdef"}'),
        "hub's own records": ("managedclusters", f"{bystander.namespace}.precious", b"{}"),
        "followed bucket": ("descriptions", f"{attacker.namespace}.app", b'{"pwned": true}'),
    }
    answers = await asyncio.gather(*(attacker.store(*attempt) for attempt in attempts.values()))
    accepted = [what for what, got in zip(attempts, answers, strict=True) if not refused(got)]
    assert accepted == [], f"writes accepted: {dict(zip(attempts, answers, strict=True))}"
    assert await unchanged(hub, seeded) == {}
    assert await record(hub, "clustercredentials", bystander.cluster_id) == credential
    assert await record(hub, "descriptions-status", f"{attacker.namespace}.ghost") is None
    assert await record(hub, "managedclusters-status", f"{attacker.namespace}.junk") is None
    assert await record(hub, "node-inventories", f"{attacker.namespace}.junk") is None


async def test_events_about_another_or_oversized_are_refused(
    hub: RegistrationHub, attacker: Attacker, bystander: Attacker
) -> None:
    def event(namespace: str, message: str) -> bytes:
        involved = ObjectReference(
            api_version="apps.clusternet.io/v1alpha1", kind="Description", namespace=namespace, name="precious"
        )
        return Event.about(involved, "Warning", "Forged", message, "agent").to_json()

    b_events = f"events.*.{bystander.namespace}.>"
    a_events = f"events.*.{attacker.namespace}.>"
    before_b, before_a = await stream_messages(hub, "EVENTS", b_events), await stream_messages(hub, "EVENTS", a_events)
    forged, huge = event(bystander.namespace, "from A"), event(attacker.namespace, "x" * (64 * 1024))
    await asyncio.gather(
        attacker.intake("event", forged),
        attacker.intake("event", huge),
        attacker.ask(f"events.Description.{bystander.namespace}.precious", forged),
        attacker.ask(f"events.Description.{attacker.namespace}.precious", huge),
    )
    await attacker.settle()
    assert await stream_messages(hub, "EVENTS", b_events) == before_b, "A recorded an Event about B's object"
    assert await stream_messages(hub, "EVENTS", a_events) == before_a, "A stored a 64 KiB Event"

"""Issue 7, class 4: A finds, retargets, pulls from or deletes B's consumer.

B is a REAL agent process following its Descriptions with its consumer. Its name is either
fixed by the hardened grants (`agent_consumer_name`, so anyone can compute it) or, today,
random; here it is read through the system account (JSZ), as if it had leaked (the issue's
forged-409 trick revealed it). Whatever A does with it, B's consumer keeps following B's own
keys, nothing of B's reaches A, B applies nothing of A's and keeps working.
"""

from __future__ import annotations

import asyncio

from clusternet_nats.api.registration import agent_consumer_name
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.msg import Msg

from tests.isolation.attackers import (
    APIS,
    FOLLOWED,
    FOLLOWED_STREAM,
    SHORT,
    Attacker,
    Victim,
    consumers,
    leaked_pull_inbox,
    put_description,
    victims_consumer,
)
from tests.registration.harness import RegistrationHub

PLANTED = "planted-by-a"


def from_victim(victim: Victim, got: list[Msg]) -> list[Msg]:
    return [m for m in got if victim.namespace in m.subject or victim.namespace.encode() in m.data]


async def victim_with_a_description(hub: RegistrationHub, attacker: Attacker, victim: Victim) -> str:
    """B holds one applied Description; A has one of its own (a positive control for its pulls)."""
    await victim.applies("kept", "b-kept")
    await put_description(hub, attacker.namespace, "evil", PLANTED)
    return await victims_consumer(hub, victim.namespace)


async def test_cannot_take_or_retarget_victims_consumer(
    hub: RegistrationHub, attacker: Attacker, victim: Victim
) -> None:
    name = await victim_with_a_description(hub, attacker, victim)
    for target in {name, agent_consumer_name(victim.namespace)}:
        for namespace in (attacker.namespace, victim.namespace):
            # Create-or-update with B's consumer name: A's filter retargets it; B's would let A share it.
            await attacker.create_consumer(target, namespace=namespace)
            await attacker.create_consumer(target, namespace=namespace, deliver_policy="last_per_subject")
    now = await consumers(hub)
    taken = {n: f for n, f in now.items() if n in {name, agent_consumer_name(victim.namespace)}}
    assert all(f == f"$KV.{FOLLOWED}.{victim.namespace}.>" for f in taken.values()), f"B's consumer retargeted: {now}"
    await victim.applies("after-attack", "b-after")
    assert "ConfigMap/default/b-kept" in victim.applied()
    assert not [ref for ref in victim.applied() if PLANTED in ref], f"B applied A's objects: {victim.applied()}"


async def test_cannot_delete_victims_consumer(hub: RegistrationHub, attacker: Attacker, victim: Victim) -> None:
    name = await victim_with_a_description(hub, attacker, victim)
    answers = await asyncio.gather(
        *(attacker.js_api(f"CONSUMER.DELETE.{FOLLOWED_STREAM}.{name}", None, api) for api in APIS)
    )
    assert not any(a and a.get("success") for a in answers), f"A deleted B's consumer: {answers}"
    assert name in await consumers(hub), "B's consumer is gone"
    await victim.applies("after-attack", "b-after")
    assert "ConfigMap/default/b-kept" in victim.applied()


async def test_cannot_pull_from_victims_consumer(hub: RegistrationHub, attacker: Attacker, victim: Victim) -> None:
    name = await victim_with_a_description(hub, attacker, victim)
    await attacker.create_consumer()
    await attacker.pulled_own()  # where clusters may pull at all, A's own consumer delivers to A
    inbox = attacker.nc.new_inbox()
    got = await attacker.listen(inbox)
    await attacker.pull(inbox, batch=100, name=name)
    await victim.applies("after-attack", "b-after")  # B's consumer delivers meanwhile
    await holds(lambda: not from_victim(victim, got), SHORT, "A pulled B's Descriptions")


async def test_cannot_inspect_or_list_consumers_and_streams(
    hub: RegistrationHub, attacker: Attacker, victim: Victim
) -> None:
    name = await victim_with_a_description(hub, attacker, victim)
    ops = [
        f"CONSUMER.INFO.{FOLLOWED_STREAM}.{name}",
        f"CONSUMER.INFO.{FOLLOWED_STREAM}.{agent_consumer_name(victim.namespace)}",
        f"CONSUMER.LIST.{FOLLOWED_STREAM}",
        f"CONSUMER.NAMES.{FOLLOWED_STREAM}",
        "STREAM.LIST",
        "STREAM.NAMES",
        "INFO",
        f"STREAM.INFO.{FOLLOWED_STREAM}",
    ]
    answers = await asyncio.gather(*(attacker.ask(f"{api}.{op}", b"{}") for api in APIS for op in ops))
    told = [
        m.data[:300]
        for m in answers
        if m is not None and (victim.namespace.encode() in m.data or name.encode() in m.data)
    ]
    assert told == [], "A learned B's namespace or consumer"


async def test_forged_409_into_victims_inbox_loses_nothing(
    hub: RegistrationHub, attacker: Attacker, victim: Victim
) -> None:
    """A makes the server answer into B's pull inbox with 409s (its own pull exceeding max_bytes,
    its own consumer deleted under a pending pull): B keeps all it applied and keeps working,
    with one consumer on its keys."""
    await victim_with_a_description(hub, attacker, victim)
    for _ in range(3):
        inbox = await leaked_pull_inbox(hub, victim.connection_name, victim.cluster_id)
        await attacker.fresh_consumer()
        await attacker.pull(inbox, batch=1, max_bytes=1)
        await attacker.pull(inbox, batch=1, expires=30)
        await attacker.delete_consumer()
    await victim.applies("after-attack", "b-after")
    assert "ConfigMap/default/b-kept" in victim.applied()
    mine = f"$KV.{FOLLOWED}.{victim.namespace}.>"
    await eventually(lambda: _one_consumer(hub, mine), 30, interval=0.5, what="B follows with one consumer")


async def _one_consumer(hub: RegistrationHub, subject_filter: str) -> bool:
    return list((await consumers(hub)).values()).count(subject_filter) == 1

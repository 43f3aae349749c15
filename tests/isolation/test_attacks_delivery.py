"""Issue 7, class 1: A makes B's agent apply A's objects.

NATS does not check reply subjects, and a push consumer delivers wherever its config says, so
the JetStream server itself will deliver A's messages into any subject A names: B's pull inbox
(learned here through the system account, as a leak would give it) or B's push subjects. The
victim is a REAL agent process; what its simulated cluster holds (its persisted state) and
what it reports are the outcome. B must apply nothing of A's, lose nothing, and keep working.
"""

from __future__ import annotations

import json
from pathlib import Path

from clusternet_nats.api.apps import Description
from clusternet_nats.api.push import PruneRequest, PushRequest, proxy_subject
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.waiting import eventually, holds

from tests.isolation.attackers import (
    Attacker,
    Victim,
    accepted,
    delivered,
    leaked_pull_inbox,
    put_description,
    victim_agent,
)
from tests.registration.harness import RegistrationHub

PLANTED = "planted-by-a"


def planted(victim: Victim) -> list[str]:
    return [ref for ref in victim.applied() if PLANTED in ref]


async def test_pull_into_victims_inbox_applies_nothing(
    hub: RegistrationHub, attacker: Attacker, victim: Victim
) -> None:
    """A pulls from its own consumer with B's pull inbox as the reply subject."""
    await put_description(hub, attacker.namespace, "evil", PLANTED)
    await attacker.create_consumer()
    await attacker.pulled_own()  # where clusters may pull at all, A's consumer delivers to A
    for _ in range(3):  # B makes a new consumer (and inbox) whenever it sees a gap: follow it
        inbox = await leaked_pull_inbox(hub, victim.connection_name, victim.cluster_id)
        await attacker.fresh_consumer()  # consumer sequence 1, as B's fresh consumer expects next
        await attacker.pull(inbox, batch=1)
    await victim.applies("after-attack", "b-own")
    await holds(lambda: not planted(victim), 2.0, f"B applied A's objects: {victim.applied()}")
    assert await victim.reported("evil") is None


async def test_push_consumer_into_victims_inbox_applies_nothing(
    hub: RegistrationHub, attacker: Attacker, victim: Victim
) -> None:
    """A makes a push consumer of its own whose deliver subject is B's pull inbox."""
    await put_description(hub, attacker.namespace, "evil", PLANTED)
    own = attacker.nc.new_inbox()
    got = await attacker.listen(own)
    if accepted(await attacker.fresh_consumer(deliver_subject=own)):  # hardened: clusters hold no consumer
        await eventually(lambda: got, 10, what="positive control: A's push consumer delivers to A")
    for _ in range(3):
        inbox = await leaked_pull_inbox(hub, victim.connection_name, victim.cluster_id)
        await attacker.fresh_consumer(deliver_subject=inbox, ack_policy="explicit")
    await victim.applies("after-attack", "b-own")
    await holds(lambda: not planted(victim), 2.0, f"B applied A's objects: {victim.applied()}")


async def test_push_consumer_into_victims_push_subjects(
    hub: RegistrationHub, attacker: Attacker, tmp_path: Path
) -> None:
    """B lets the hub push (Dual + AppPusher); A has the server deliver a prune (keep nothing)
    and an apply of its own objects into B's `clusternet.proxy.<ns>.<name>.{prune,apply}`, as
    replies of its pulls and as a push consumer's deliveries. B keeps what the hub pushed,
    applies nothing of A's, and still takes the hub's pushes."""
    async with victim_agent(hub, tmp_path, "--sync-mode", "Dual", "--app-pusher") as victim:
        await push(hub, victim, "kept", "b-kept")
        forged_apply = PushRequest(key=f"{victim.namespace}.evil", description=await a_description(hub, attacker))
        bodies = {"prune": PruneRequest(keep=[]).to_json(), "apply": forged_apply.to_json()}
        for verb, body in bodies.items():
            target = proxy_subject(victim.namespace, victim.name, verb)
            # Today A may write any body into its own status keys and follow them; hardened it has
            # only its Descriptions, which the hub writes: it tries both.
            for bucket in ("descriptions-status", "descriptions"):
                await attacker.store(bucket, f"{attacker.namespace}.{verb}", body)
                stream = f"KV_{bucket}"
                if accepted(await attacker.fresh_consumer(stream=stream, bucket=bucket)):
                    await attacker.pull(target, batch=10, stream=stream)
                    await delivered(hub, stream, attacker.consumer, timeout=3)
                    await attacker.fresh_consumer(stream=stream, bucket=bucket, deliver_subject=target)
                    await attacker.delete_consumer(stream=stream)
        await push(hub, victim, "after-attack", "b-after")
        await holds(
            lambda: "ConfigMap/default/b-kept" in victim.applied() and not planted(victim),
            2.0,
            f"B lost what the hub pushed, or applied A's objects: {victim.applied()}",
        )


async def a_description(hub: RegistrationHub, attacker: Attacker) -> Description | None:
    await put_description(hub, attacker.namespace, "evil", PLANTED)
    store: ObjectStore[Description] = ObjectStore(hub.nc.jetstream(), by_kind("Description"))
    return await store.get(attacker.namespace, "evil")


async def push(hub: RegistrationHub, victim: Victim, name: str, configmap: str) -> None:
    """The hub pushes a Description to B (its own reply prefix), and B applies it."""
    key = await put_description(hub, victim.namespace, name, configmap)
    store: ObjectStore[Description] = ObjectStore(hub.nc.jetstream(), by_kind("Description"))
    description = await store.get(victim.namespace, name)
    request = PushRequest(key=key, description=description).to_json()
    subject = proxy_subject(victim.namespace, victim.name, "apply")

    async def pushed() -> bool:
        try:
            reply = json.loads((await request_cluster(hub.nc, victim.namespace, subject, request, timeout=2)).data)
        except Exception:
            return False
        return bool((reply.get("status") or {}).get("phase") == "Success")

    await eventually(pushed, 30, interval=0.2, what=f"the hub's push of {key} applied by B")
    await eventually(lambda: f"ConfigMap/default/{configmap}" in victim.applied(), 10, what="push persisted")

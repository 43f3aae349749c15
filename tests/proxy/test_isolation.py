"""Cluster A's own credential, on a real secured hub (auth callout): it serves its own proxy
streams, and can neither read cluster B's proxy requests nor answer them."""

from __future__ import annotations

from clusternet_nats.api.proxy import socket_subject, stream_reply
from clusternet_nats.hub.registration.testing import RegistrationHub
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.msg import Msg

from tests.isolation.test_isolation import VIOLATION, joined
from tests.registration.harness import hub

__all__ = ["hub"]


async def test_a_cluster_cannot_read_or_answer_another_clusters_proxy_streams(hub: RegistrationHub) -> None:
    a, b = await joined(hub), await joined(hub)
    seen_by_a: list[str] = []
    answers_to_hub: list[bytes] = []

    async def record(msg: Msg) -> None:
        seen_by_a.append(msg.subject)

    async def answered(msg: Msg) -> None:
        answers_to_hub.append(msg.data)

    await a.nc.subscribe(socket_subject(a.namespace, "*"), cb=record)  # its own: allowed
    await a.nc.subscribe(socket_subject(b.namespace, "*"), cb=record)  # B's: refused
    await barrier(a.nc)
    await hub.nc.subscribe(stream_reply(b.namespace, "s1"), cb=answered)
    await barrier(hub.nc)

    await hub.nc.publish(socket_subject(a.namespace, "s1"), b"to a", reply=stream_reply(a.namespace, "s1"))
    await hub.nc.publish(socket_subject(b.namespace, "s1"), b"to b", reply=stream_reply(b.namespace, "s1"))
    await a.nc.publish(stream_reply(b.namespace, "s1"), b"forged answer")
    await barrier(a.nc)

    await eventually(lambda: seen_by_a == [socket_subject(a.namespace, "s1")], timeout=5, what="A's own stream")
    await eventually(
        lambda: len([e for e in a.client.errors if VIOLATION in e.lower()]) >= 2, timeout=5, what="both refused"
    )
    refusals = [e.lower() for e in a.client.errors if VIOLATION in e.lower()]
    assert any("subscription" in e and b.namespace in e for e in refusals), refusals
    assert any("publish" in e and b.namespace in e for e in refusals), refusals
    # The hub hears only the server's no-responders for B's stream (nobody serves it), never A's forgery.
    await holds(
        lambda: seen_by_a == [socket_subject(a.namespace, "s1")] and b"forged answer" not in answers_to_hub,
        0.5,
        "nothing of B's reaches A, nothing of A's reaches B's stream",
    )

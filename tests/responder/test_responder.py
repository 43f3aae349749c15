"""The shared responder (runtime/responder.py) on a real nats-server: one policy for every
service that answers requests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import nats.errors
import pytest
from clusternet_nats.runtime.responder import Failure, Responder, Unanswerable
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg


class Echo:
    """Answers its body back; raises what the body names; refuses replies outside `allowed`."""

    def __init__(self, allowed: str = "_INBOX.") -> None:
        self.allowed = allowed
        self.running = 0
        self.peak = 0
        self.order: list[str] = []
        self.release = asyncio.Event()

    def accept(self, msg: Msg) -> str:
        if not msg.reply.startswith(self.allowed):
            raise Unanswerable(f"reply {msg.reply!r} is not under {self.allowed!r}")
        return msg.data.decode()

    async def answer(self, request: str) -> bytes:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            if request == "raise":
                raise RuntimeError("the secret internals")
            if request == "unavailable":
                raise nats.errors.TimeoutError
            if request.startswith("wait"):
                await self.release.wait()
            self.order.append(request)
            return json.dumps({"ok": request}).encode()
        finally:
            self.running -= 1

    def failed(self, request: str, failure: Failure) -> bytes:
        return json.dumps({"error": failure.reason, "retryable": failure.retryable}).encode()


@pytest.fixture
async def client(nats_server: NatsServer) -> AsyncIterator[NATS]:
    nc = await nats.connect(nats_server.url)
    yield nc
    await nc.close()


def collector(into: list[Msg]) -> Callable[[Msg], Awaitable[None]]:
    async def collect(msg: Msg) -> None:
        into.append(msg)

    return collect


async def ask(nc: NATS, subject: str, body: str, timeout: float = 2.0) -> dict[str, object]:
    answer: dict[str, object] = json.loads((await nc.request(subject, body.encode(), timeout=timeout)).data)
    return answer


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
async def test_an_unexpected_error_is_answered_saying_why(client: NATS, unique_ns: str, trusted: bool) -> None:
    responder = Responder(client, f"{unique_ns}.echo", Echo(), name="the echo", trusted=trusted)
    await responder.start()
    try:
        assert await ask(client, f"{unique_ns}.echo", "hello") == {"ok": "hello"}
        failed = await ask(client, f"{unique_ns}.echo", "raise")
        assert failed["retryable"] is False
        reason = str(failed["error"])
        assert reason.startswith("the echo failed unexpectedly (") and "RuntimeError" in reason
        # Only a trusted requester reads the error's text; anyone else learns its type.
        assert ("the secret internals" in reason) is trusted
        unavailable = await ask(client, f"{unique_ns}.echo", "unavailable")
        assert unavailable["retryable"] is True and "cannot reach NATS or its store" in str(unavailable["error"])
        # and it goes on answering
        assert await ask(client, f"{unique_ns}.echo", "again") == {"ok": "again"}
        assert (responder.stats.failed, responder.stats.answered) == (2, 4)
    finally:
        await responder.stop()


async def test_a_request_it_may_not_answer_is_dropped(client: NATS, unique_ns: str) -> None:
    """NATS does not check reply subjects: `accept` decides whom to answer, and the rest get nothing."""
    responder = Responder(client, f"{unique_ns}.echo", Echo(allowed="mine."), name="the echo")
    await responder.start()
    try:
        answers: list[Msg] = []
        await client.subscribe("mine.>", cb=collector(answers))
        await client.subscribe("theirs.>", cb=collector(answers))
        await client.publish(f"{unique_ns}.echo", b"to me", reply="mine.1")
        await eventually(lambda: [m.subject for m in answers] == ["mine.1"], timeout=5, what="the positive control")
        await client.publish(f"{unique_ns}.echo", b"to them", reply="theirs.1")
        await client.publish(f"{unique_ns}.echo", b"no reply")
        await eventually(lambda: responder.stats.dropped == 2, timeout=5, what="both dropped")
        await holds(lambda: len(answers) == 1, 0.5, "nothing answered to a reply it may not answer")
        assert responder.stats.answered == 1
    finally:
        await responder.stop()


async def test_concurrency_one_keeps_arrival_order_and_a_bound_is_a_bound(client: NATS, unique_ns: str) -> None:
    serial, parallel = Echo(), Echo()
    one = Responder(client, f"{unique_ns}.serial", serial, name="serial")
    three = Responder(client, f"{unique_ns}.parallel", parallel, name="parallel", concurrency=3)
    await one.start()
    await three.start()
    try:
        asked = [asyncio.create_task(ask(client, f"{unique_ns}.serial", f"wait-{i}", 10)) for i in range(5)]
        asked += [asyncio.create_task(ask(client, f"{unique_ns}.parallel", f"wait-{i}", 10)) for i in range(6)]
        await eventually(lambda: parallel.running == 3 and serial.running == 1, timeout=5, what="slots taken")
        serial.release.set()
        parallel.release.set()
        await asyncio.gather(*asked)
        assert serial.order == [f"wait-{i}" for i in range(5)]
        assert (serial.peak, one.peak_in_flight) == (1, 1)
        assert (parallel.peak, three.peak_in_flight) == (3, 3)
    finally:
        await one.stop()
        await three.stop()


async def test_a_queue_group_answers_each_request_once(client: NATS, unique_ns: str) -> None:
    replicas = [Responder(client, f"{unique_ns}.q", Echo(), name=f"replica {i}", queue="q") for i in range(2)]
    for replica in replicas:
        await replica.start()
    try:
        answers: list[Msg] = []
        await client.subscribe("_INBOX.answers.>", cb=collector(answers))
        for i in range(20):
            await client.publish(f"{unique_ns}.q", b"x", reply=f"_INBOX.answers.{i}")
        await eventually(lambda: len(answers) == 20, timeout=5, what="all answered")
        await holds(lambda: len(answers) == 20, 0.3, "no request answered twice")
        assert sum(r.stats.received for r in replicas) == 20
    finally:
        for replica in replicas:
            await replica.stop()


async def test_stop_cancels_what_runs(client: NATS, unique_ns: str) -> None:
    echo = Echo()
    responder = Responder(client, f"{unique_ns}.stop", echo, name="stopping")
    await responder.start()
    asked = asyncio.create_task(ask(client, f"{unique_ns}.stop", "wait", 2))
    await eventually(lambda: echo.running == 1, timeout=5, what="a request running")
    await responder.stop()
    assert responder.in_flight == 0 and echo.running == 0
    with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
        await asked

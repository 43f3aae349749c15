"""Isolation across leaf links: two children, each behind its own leaf node with its own
credentials. What A's leaf may carry is decided by the hub's permissions for A, so A's client
neither reads B's Descriptions nor answers B's requests, even though its local leaf lets it try
(violations on a leaf link are dropped silently, so the test asserts on what arrives)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import nats.errors
import nats.js.errors
import pytest
from clusternet_nats.agent.leaf import LeafNode, LeafRemote
from clusternet_nats.api.registration import APPROVED
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store import JsonBucket
from clusternet_nats.store.errors import IntakeRefusedError
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.registration.harness import Client, RegistrationHub, new_cluster_id, register


@dataclass
class Child:
    cluster_id: str
    namespace: str
    leaf: LeafNode
    nc: NATS


async def child(hub: RegistrationHub, directory: Path, name: str) -> Child:
    cluster_id = new_cluster_id()
    reply, secret = await register(hub.secure.server.url, cluster_id, await hub.token())
    assert reply.result == APPROVED and reply.dedicated_namespace
    leaf = LeafNode(directory / name, name)
    await leaf.start(LeafRemote(hub.secure.leaf_url, cluster_id, secret, hub.secure.pki.ca_cert))
    nc = await Client().connect(leaf.url, cluster_id, None)
    return Child(cluster_id, reply.dedicated_namespace, leaf, nc)


def confined(child: Child, bucket: str, timeout: float = 5) -> JsonBucket:
    """A bucket as a cluster reads it: direct gets only (writes would go to the hub's intake)."""
    return JsonBucket(
        child.nc.jetstream(domain="hub", timeout=timeout),
        bucket,
        IntakeClient(child.nc, child.cluster_id, child.namespace),
    )


@pytest.fixture
async def children(hub: RegistrationHub, tmp_path: Path) -> AsyncIterator[tuple[Child, Child]]:
    a, b = await child(hub, tmp_path, "a"), await child(hub, tmp_path, "b")
    try:
        yield a, b
    finally:
        for c in (a, b):
            await c.nc.close()
            await c.leaf.stop()


async def test_leaf_carries_only_its_clusters_subjects(hub: RegistrationHub, children: tuple[Child, Child]) -> None:
    a, b = children
    descriptions = JsonBucket(hub.nc.jetstream(), "descriptions")
    for c in (a, b):
        await descriptions.create(f"{c.namespace}.app", json.dumps({"ns": c.namespace}).encode())

    async def reads_own() -> bool:
        try:
            found = await confined(a, "descriptions", timeout=2).get(f"{a.namespace}.app")
        except Exception:
            return False  # the leaf link is still coming up
        return found is not None

    await eventually(reads_own, timeout=20, what="A reads its own Description through its leaf")
    # Through the intake the hub refuses B's keys; JetStream itself is not reachable across the leaf.
    with pytest.raises(IntakeRefusedError) as refused:
        await confined(a, "descriptions").get(f"{b.namespace}.app")
    assert refused.value.code == 403
    unreachable = (TimeoutError, nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError)
    with pytest.raises(unreachable):
        await asyncio.wait_for(JsonBucket(a.nc.jetstream(domain="hub"), "descriptions").get(f"{a.namespace}.app"), 2)

    subject = f"clusternet.proxy.{b.namespace}.get"

    async def answer_b(msg: Msg) -> None:
        await msg.respond(b"b")

    async def answer_a(msg: Msg) -> None:
        await msg.respond(b"a")

    await b.nc.subscribe(subject, cb=answer_b)
    await a.nc.subscribe(subject, cb=answer_a)

    async def b_answers() -> bool:
        try:
            return (await request_cluster(hub.nc, b.namespace, subject, b"", timeout=1)).data == b"b"
        except (TimeoutError, nats.errors.NoRespondersError):
            return False

    await eventually(b_answers, timeout=20, what="B answers through its leaf")
    answers = {(await request_cluster(hub.nc, b.namespace, subject, b"", timeout=2)).data for _ in range(10)}
    assert answers == {b"b"}

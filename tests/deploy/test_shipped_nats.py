"""deploy/compose/nats.conf, as committed, with the secrets `clusternet-nats-init` makes: nothing
connects anonymously, passwords are checked, a leaf node without a cluster's credential receives
no cluster's subjects, monitoring is loopback only, and each service user works."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import urllib.request
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import psutil
import pytest
from clusternet_nats.api.registration import APPROVED, inbox_prefix, registering_inbox_prefix
from clusternet_nats.runtime import natsconf
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.deploy.shipped import Leaf, Shipped, shipped_hub
from tests.registration.harness import Client, register


@pytest.fixture
async def shipped(tmp_path: Path) -> AsyncIterator[Shipped]:
    async with shipped_hub(tmp_path) as hub:
        yield hub


async def _connect(url: str) -> NATS:
    return await nats.connect(url, allow_reconnect=False, connect_timeout=3, max_reconnect_attempts=0)


async def test_anonymous_client_is_refused(shipped: Shipped) -> None:
    with pytest.raises(Exception, match=r"(?i)authorization"):
        await _connect(shipped.anonymous_url)


@pytest.mark.parametrize("user", [*natsconf.SERVICE_USERS, natsconf.CALLOUT_USER, natsconf.SYSTEM_USER])
async def test_wrong_password_is_refused(shipped: Shipped, user: str) -> None:
    with pytest.raises(Exception, match=r"(?i)authorization"):
        await _connect(f"nats://{user}:not-the-password@127.0.0.1:{shipped.server.port}")


async def test_each_service_user_uses_jetstream_in_the_hub_domain(shipped: Shipped) -> None:
    for service in natsconf.SERVICE_USERS:
        nc = await _connect(shipped.env(service)["CNET_NATS_URL"])
        try:
            js = nc.jetstream(domain=natsconf.JETSTREAM_DOMAIN)
            kv = await js.create_key_value(bucket=f"probe-{service}")
            await kv.put("k", service.encode())
            assert (await kv.get("k")).value == service.encode()
        finally:
            await nc.close()


def _non_loopback_ipv4() -> str | None:
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


async def test_monitoring_answers_on_loopback_only(shipped: Shipped) -> None:
    port = shipped.server.monitor_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:  # noqa: ASYNC210
        assert resp.status == 200
    address = _non_loopback_ipv4()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection(address, port)


async def _registered(shipped: Shipped) -> tuple[str, str, NATS]:
    """Cluster B, registered with the bootstrap token init wrote for the agent (which the hub
    stored from its --bootstrap-token-file), connected with its own credential."""
    cluster_id = str(uuid.uuid4())
    token = shipped.env("agent")["CNET_AGENT_BOOTSTRAP_TOKEN"]
    reply, secret = await register(shipped.anonymous_url, cluster_id, token)
    assert reply.result == APPROVED, reply
    assert reply.dedicated_namespace
    nc = await Client().connect(shipped.anonymous_url, cluster_id, secret)
    return cluster_id, reply.dedicated_namespace, nc


@contextlib.asynccontextmanager
async def _watching(url: str) -> AsyncIterator[list[Msg]]:
    """Everything a client of a leaf node receives on `>`."""
    got: list[Msg] = []

    async def keep(msg: Msg) -> None:
        got.append(msg)

    nc = await nats.connect(url, allow_reconnect=False, connect_timeout=3)
    await nc.subscribe(">", cb=keep)
    await barrier(nc)
    try:
        yield got
    finally:
        await nc.close()


async def _send_b_traffic(shipped: Shipped, cluster_id: str, namespace: str, b: NATS, via: NATS | None = None) -> None:
    """Publishes on B's subjects as the hub does and waits until B itself has received them all."""
    received: list[str] = []

    async def keep(msg: Msg) -> None:
        received.append(msg.subject)

    subjects = [f"clusternet.proxy.{namespace}.probe", f"{inbox_prefix(cluster_id)}.probe"]
    for subject in subjects:
        await b.subscribe(subject, cb=keep)
    await barrier(b)
    hub = via or await _connect(shipped.env("hub")["CNET_NATS_URL"])

    async def all_received() -> bool:
        # Published again until B has each (a positive control: more of B's traffic can only make
        # the leaf's assertion that none of it crossed stronger).
        for subject in set(subjects) - set(received):
            await hub.publish(subject, b"for B only")
        await barrier(hub)
        return set(received) >= set(subjects)

    try:
        await eventually(all_received, timeout=20, what=f"B received them (B connected: {b.is_connected})")
    finally:
        if via is None:
            await hub.close()


async def _leafz(shipped: Shipped) -> list[dict[str, object]]:
    sys_nc = await _connect(shipped.env("hub")["CNET_HUB_SYSTEM_URL"])
    try:
        msg = await sys_nc.request("$SYS.REQ.SERVER.PING.LEAFZ", b'{"subscriptions": true}', timeout=5)
    finally:
        await sys_nc.close()
    data = json.loads(msg.data)["data"]
    return list(data.get("leafs") or [])


async def test_anonymous_leaf_node_is_refused_and_receives_nothing(shipped: Shipped, tmp_path: Path) -> None:
    ca = shipped.out / "agent" / "hub-ca.crt"
    cluster_id, namespace, b = await _registered(shipped)
    try:
        async with Leaf(tmp_path / "anonymous", shipped.leaf_url, ca) as leaf, _watching(leaf.url) as got:
            await eventually(
                lambda: leaf.logged("Authorization Violation"), timeout=20, what="the hub refused the leaf"
            )
            await _send_b_traffic(shipped, cluster_id, namespace, b)
            assert await _leafz(shipped) == []
            assert [m.subject for m in got] == []
    finally:
        await b.close()


async def test_leaf_node_with_a_bootstrap_token_receives_no_cluster_subjects(shipped: Shipped, tmp_path: Path) -> None:
    """A token holder dials the leaf port as a cluster id of its choosing. As registered B it is
    refused; as a fresh id its link is up (its own registration inbox reaches it), yet nothing on
    B's subjects crosses to it."""
    ca = shipped.out / "agent" / "hub-ca.crt"
    token = shipped.env("agent")["CNET_AGENT_BOOTSTRAP_TOKEN"]
    cluster_id, namespace, b = await _registered(shipped)
    hub = await _connect(shipped.env("hub")["CNET_NATS_URL"])
    try:
        url = shipped.leaf_url.replace("tls://", f"tls://{cluster_id}:{token}@")
        async with Leaf(tmp_path / "as-b", url, ca) as leaf, _watching(leaf.url) as got:
            await eventually(lambda: leaf.logged("Authorization Violation"), timeout=20, what="B's id refused")
            await _send_b_traffic(shipped, cluster_id, namespace, b)
            assert [m.subject for m in got] == []

        fresh = str(uuid.uuid4())
        url = shipped.leaf_url.replace("tls://", f"tls://{fresh}:{token}@")
        async with Leaf(tmp_path / "fresh", url, ca) as leaf, _watching(leaf.url) as got:

            async def marker_arrived(name: str) -> bool:
                """Publishes on the token holder's own inbox until it arrives: the link is up and,
                one publisher's messages keeping their order, whatever came before has crossed."""
                subject = f"{registering_inbox_prefix(fresh)}.{name}"
                await hub.publish(subject, b"")
                await barrier(hub)
                return subject in [m.subject for m in got]

            await eventually(lambda: marker_arrived("up"), timeout=20, what="the token leaf's link is up")
            await _send_b_traffic(shipped, cluster_id, namespace, b, via=hub)
            await eventually(lambda: marker_arrived("after"), timeout=10, what="the marker after B's traffic")
            assert {m.subject for m in got} == {f"{registering_inbox_prefix(fresh)}.{n}" for n in ("up", "after")}
    finally:
        await hub.close()
        await b.close()

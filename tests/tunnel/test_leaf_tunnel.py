"""A child reached only through its outbound leaf link: registers, gets Descriptions, answers.

Real hub nats-server (TLS leaf port, auth callout), real leaf nats-server started by the agent's
LeafNode; the child's client connects to its local leaf only.
"""

from __future__ import annotations

import json
from pathlib import Path

import nats
from clusternet_nats.agent.leaf import LeafNode, LeafRemote
from clusternet_nats.agent.registration import request_registration
from clusternet_nats.api.clusters import ClusterRegistrationRequestSpec, ManagedCluster
from clusternet_nats.api.registration import new_secret, registering_inbox_prefix
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store import Informer, JsonBucket, ObjectStore
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.testing.waiting import eventually
from nats.aio.msg import Msg
from nats.errors import NoRespondersError

from tests.registration.harness import Client, RegistrationHub, new_cluster_id


async def test_child_behind_outbound_leaf_registers_receives_and_answers(hub: RegistrationHub, tmp_path: Path) -> None:
    cluster_id, secret = new_cluster_id(), new_secret()
    leaf = LeafNode(tmp_path / "leaf", "child")
    ca = hub.secure.pki.ca_cert
    await leaf.start(LeafRemote(hub.secure.leaf_url, cluster_id, await hub.token(), ca))
    try:
        nc = await Client().connect(leaf.url, cluster_id, None, registering_inbox_prefix(cluster_id))
        spec = ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="child")
        reply = await request_registration(nc, spec, secret, timeout=20)
        await nc.close()
        namespace = reply.dedicated_namespace
        assert namespace

        await leaf.start(LeafRemote(hub.secure.leaf_url, cluster_id, secret, ca))
        client = Client()
        nc = await client.connect(leaf.url, cluster_id, None)
        assert nc.connected_url is not None and nc.connected_url.port == leaf.port

        async def answer(msg: Msg) -> None:
            await msg.respond(b"pong from " + namespace.encode())

        await nc.subscribe(f"clusternet.proxy.{namespace}.ping", cb=answer)
        descriptions = JsonBucket(hub.nc.jetstream(), "descriptions")
        await descriptions.create(f"{namespace}.first", json.dumps({"n": 1}).encode())
        informer: Informer[bytes] = Informer(
            nc,
            nc.jetstream(domain="hub"),
            "descriptions",
            lambda _k, data, _r: data,
            f"{namespace}.>",
            intake=IntakeClient(nc, cluster_id, namespace),
        )
        await eventually(lambda: _started(informer), timeout=20, what="informer over the leaf")
        try:
            await informer.wait_synced(20)
            await descriptions.create(f"{namespace}.second", json.dumps({"n": 2}).encode())
            await eventually(lambda: sorted(informer.keys()) == [f"{namespace}.first", f"{namespace}.second"], 10)
        finally:
            await informer.stop()

        async def answered() -> bool:
            try:
                msg = await request_cluster(hub.nc, namespace, f"clusternet.proxy.{namespace}.ping", b"", timeout=2)
            except NoRespondersError:  # the child's subscription has not crossed its leaf link yet
                return False
            return msg.data == b"pong from " + namespace.encode()

        await eventually(answered, timeout=10, what="request answered through the tunnel")
        assert client.errors == []

        refusals = hub.callout.refusals
        clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
        assert await clusters.delete(namespace, "child")
        await eventually(lambda: hub.callout.refusals > refusals, timeout=15, what="leaf kicked, then refused")
        assert await leaf_links(hub) == 0
        await nc.close()
    finally:
        await leaf.stop()


async def _started(informer: Informer[bytes]) -> bool:
    await informer.start()
    return True


async def leaf_links(hub: RegistrationHub) -> int:
    sys_nc = await nats.connect(hub.secure.url("sys"))
    try:
        reply = await sys_nc.request("$SYS.REQ.SERVER.PING.LEAFZ", b"{}", timeout=2)
        return int(json.loads(reply.data)["data"]["leafnodes"])
    finally:
        await sys_nc.close()

"""Registration mode on a 3-server JetStream cluster rendered as deploy/k8s renders it (routes
with the route user's password, the auth callout's accounts and a TLS leaf listener on every
server): an agent whose leaf remote lists every server registers, and keeps reporting when the
server its leaf node was connected to dies."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.heartbeat import ClusterHeartbeat
from clusternet_nats.api.registry import by_kind
from clusternet_nats.api.subjects import CREDENTIALS_BUCKET, HEARTBEAT
from clusternet_nats.hub.registration.testing import RegistrationHub, secured_hub
from clusternet_nats.runtime.connection import Connection, barrier
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.store.keys import kv_stream
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.securehub import SecureHubCluster
from clusternet_nats.testing.waiting import eventually
from nats.aio.msg import Msg

from ..registration.harness import running_agent


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RegistrationHub]:
    async with secured_hub(tmp_path / "hub", nats_cluster=3) as running:
        yield running


def leaf_links(server: NatsServer) -> int:
    """Leaf nodes connected to this server (its monitoring port's /leafz)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.monitor_port}/leafz", timeout=2) as resp:
        return int(json.loads(resp.read())["leafnodes"])


async def test_an_agent_keeps_working_when_its_leafs_server_dies(hub: RegistrationHub, tmp_path: Path) -> None:
    assert isinstance(hub.secure, SecureHubCluster)
    js = hub.nc.jetstream()
    assert (await js.stream_info(kv_stream(CREDENTIALS_BUCKET))).config.num_replicas == 3
    args = (
        *("--nats-url", "nats://127.0.0.1:1", "--cluster-name", "edge", "--sim-clusters", "1"),
        *("--hub-leaf-url", hub.secure.leaf_url, "--hub-ca", str(hub.secure.pki.ca_cert)),
    )
    async with running_agent(hub, tmp_path / "state", *args):
        clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind("ManagedCluster"))
        (cluster,) = await eventually(clusters.list, 20, what="the registered ManagedCluster")
        key = clusters.key(cluster.metadata.namespace or "", cluster.metadata.name or "")
        statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
        linked = [s for s in hub.secure.servers if leaf_links(s) == 1]
        assert len(linked) == 1, "one leaf link, to one of the servers"
        before = await eventually(lambda: statuses.get(key), 20, what="a first heartbeat")
        linked[0].kill()

        async def relinked() -> bool:
            return sum(leaf_links(s) for s in hub.secure.servers if s.proc is not None) == 1

        await eventually(relinked, 30, what="the leaf node linked to another server")

        # A steady cluster's heartbeat is a core NATS message, not a status write.
        heard: list[ClusterHeartbeat] = []

        async def hear(msg: Msg) -> None:
            heard.append(ClusterHeartbeat.model_validate_json(msg.data))

        sub = await hub.nc.subscribe(HEARTBEAT.filter(), cb=hear)
        try:
            await eventually(
                lambda: any(b.cluster_id == cluster.spec.cluster_id for b in heard),
                30,
                what="a heartbeat after the server died",
            )
        finally:
            await sub.unsubscribe()
        after = await statuses.get(key)
        assert after is not None and after.revision >= before.revision and after.value.healthz
        linked[0].start()
        hub.secure.server.wait_meta_leader()


async def test_a_service_given_one_server_reconnects_to_a_discovered_one(hub: RegistrationHub) -> None:
    """Its URL names one server (as a Kubernetes Service name does); when that one dies, the
    servers it learned from it take the user and password too, so it is back without help."""
    assert isinstance(hub.secure, SecureHubCluster)
    first = hub.secure.servers[0]
    conn = Connection(hub.secure.auth.url(first, "scheduler"), "pytest")
    nc = await conn.connect(timeout=10)
    try:
        await barrier(nc)
        first.kill()

        async def answered_elsewhere() -> bool:
            try:
                await nc.jetstream().stream_info(kv_stream(CREDENTIALS_BUCKET))
            except Exception:
                return False
            return nc.connected_url is not None and nc.connected_url.port != first.port

        await eventually(answered_elsewhere, 30, what="the connection on another server")
        assert not [e for e in conn.errors if "Authorization" in repr(e)], conn.errors
    finally:
        await conn.close()
        first.start()
        hub.secure.server.wait_meta_leader()

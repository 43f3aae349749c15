"""A cluster agent in registration mode: registers once with its token, then is its cluster.

Runs the real ClusterAgent (simulated backend) against the secured hub: the first start files
the request and keeps the credentials in the state dir; after the token is revoked, a restarted
agent still connects, because it reuses its credentials instead of registering again.
"""

from __future__ import annotations

from pathlib import Path

from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.agent.registration import CREDENTIALS_FILE, Enrollment, RegistrationSettings
from clusternet_nats.api.clusters import ClusterSyncMode, ManagedCluster
from clusternet_nats.api.registry import by_kind
from clusternet_nats.hub.registration.records import token_store
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.waiting import eventually

from tests.registration.harness import RegistrationHub


async def run_agent(hub: RegistrationHub, settings: RegistrationSettings) -> ClusterAgent:
    identity = single_cluster("edge", None, {"env": "test"}, ClusterSyncMode.PULL)
    agent = ClusterAgent(identity, SimCluster("edge", Sizing()), 5.0, enrollment=Enrollment(settings, identity))
    await agent.start(CommonOptions(nats_url=hub.secure.server.url, health_port=-1, jetstream_domain="hub"))
    await eventually(lambda: agent.ready, timeout=20, what="agent ready")
    return agent


async def test_registers_once_then_reuses_credentials(hub: RegistrationHub, tmp_path: Path) -> None:
    token = await hub.token()
    settings = RegistrationSettings(token, tmp_path / "state")
    agent = await run_agent(hub, settings)
    namespace = agent.identity.namespace
    await agent.stop()
    assert (tmp_path / "state" / "edge" / CREDENTIALS_FILE).stat().st_mode & 0o077 == 0
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    registered = await clusters.get(namespace, "edge")
    assert registered is not None and registered.metadata.labels and registered.metadata.labels["env"] == "test"

    await token_store(hub.nc.jetstream()).delete(token.split(".")[0])
    agent = await run_agent(hub, settings)
    assert agent.identity.namespace == namespace
    await agent.stop()


async def test_agent_behind_its_own_leaf_node_is_ready(hub: RegistrationHub, tmp_path: Path) -> None:
    """Registration, Descriptions, heartbeats and status, all through the agent's own leaf."""
    settings = RegistrationSettings(
        await hub.token(), tmp_path / "state", hub_leaf_url=hub.secure.leaf_url, hub_ca=hub.secure.pki.ca_cert
    )
    identity = single_cluster("edge", None, {}, ClusterSyncMode.PULL)
    agent = ClusterAgent(identity, SimCluster("edge", Sizing()), 5.0, enrollment=Enrollment(settings, identity))
    # No hub client URL at all: the only path is the leaf's outbound link.
    await agent.start(CommonOptions(nats_url="nats://127.0.0.1:1", health_port=-1, jetstream_domain="hub"))
    try:
        await eventually(lambda: agent.ready, timeout=30, what="agent ready through its leaf")
        assert agent.enrollment is not None and agent.enrollment.leaf is not None
        assert agent.ctx is not None and agent.ctx.nc.connected_url is not None
        assert agent.ctx.nc.connected_url.port == agent.enrollment.leaf.port
        status = await hub.nc.jetstream().key_value("managedclusters-status")
        assert (await status.get(f"{identity.namespace}.edge")).value
    finally:
        await agent.stop()

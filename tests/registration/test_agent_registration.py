"""A cluster agent in registration mode: registers once with its token, then is its cluster.

Runs the real ClusterAgent (simulated backend) against the secured hub: the first start files
the request and keeps the credentials in the state dir; after the token is revoked, a restarted
agent still connects, because it reuses its credentials instead of registering again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import structlog.testing
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.agent.registration import (
    CREDENTIALS_DATABASE,
    LEGACY_CREDENTIALS_FILE,
    Enrollment,
    RegistrationSettings,
    SavedCredentials,
    saved_credentials,
)
from clusternet_nats.agent.statedb import closed, opened
from clusternet_nats.api.clusters import ClusterSyncMode, ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.intake import BUCKET_HEADER, FOLLOW
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.api.registration import APPROVED, intake_subject, new_secret
from clusternet_nats.api.registry import by_kind
from clusternet_nats.hub.registration.records import token_store
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.testing.waiting import eventually
from nats.aio.msg import Msg

from tests.registration.harness import RegistrationHub, new_cluster_id, register


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
    kept = sorted((tmp_path / "state").glob(f"{CREDENTIALS_DATABASE}*"))
    assert kept and all(path.stat().st_mode & 0o077 == 0 for path in kept), kept  # the WAL too: it holds secrets
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    registered = await clusters.get(namespace, "edge")
    assert registered is not None and registered.metadata.labels and registered.metadata.labels["env"] == "test"

    await token_store(hub.nc.jetstream()).delete(token.split(".")[0])
    agent = await run_agent(hub, settings)
    assert agent.identity.namespace == namespace
    await agent.stop()


async def test_a_new_cluster_reads_only_its_managedcluster_and_a_restart_writes_nothing_it_finds_written(
    hub: RegistrationHub, tmp_path: Path
) -> None:
    """In a registration storm each intake request costs the agent, the hub and NATS: a new
    cluster takes its ManagedCluster and its first status from the registrar's answer, writes its
    report over that status (not refused by it), and creates its node inventory without reading
    it. A restarted agent reads its ManagedCluster; its creates
    conflict, the hub's refusals carry what is stored, its inventory and its last report, and it
    writes neither again nor asks for them."""
    settings = RegistrationSettings(await hub.token(), tmp_path / "state")
    identity = single_cluster("edge", None, {"env": "test"}, ClusterSyncMode.PULL)
    asked: list[tuple[str, str]] = []

    async def intake(msg: Msg) -> None:
        verb = msg.subject.rsplit(".", 1)[-1]
        if verb != FOLLOW:  # the Description informer's, not the heartbeat's
            asked.append((verb, (msg.headers or {}).get(BUCKET_HEADER, "")))

    sub = await hub.nc.subscribe(intake_subject(identity.namespace, "*"), cb=intake)
    js = hub.nc.jetstream()
    statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
    inventories = StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory)
    key = f"{identity.namespace}.edge"
    try:
        agent = await run_agent(hub, settings)
        await agent.stop()
        assert sorted(asked) == [("put", "managedclusters-status"), ("put", NODE_INVENTORIES_BUCKET)], asked
        first, inventory = await statuses.get(key), await inventories.get(key)
        assert first is not None and inventory is not None
        assert {c.type for c in first.value.conditions or []} == {"Ready", "ClusterInit"}, "the report beside it"

        asked.clear()
        agent = await run_agent(hub, settings)
        await agent.stop()
        assert sorted(asked) == [
            ("get", "managedclusters"),
            ("put", "managedclusters-status"),
            ("put", NODE_INVENTORIES_BUCKET),
        ], asked
        assert (await statuses.get(key)) == first  # the same revision: not written again
        assert (await inventories.get(key)) == inventory
    finally:
        await sub.unsubscribe()


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


async def test_a_cluster_changed_after_its_registration_keeps_the_change_and_gets_its_node_labels(
    hub: RegistrationHub, tmp_path: Path
) -> None:
    """The first heartbeat builds on the ManagedCluster the registrar's answer carried; changed
    since (here an administrator's label), its compare-and-set loses, and the agent reads the
    cluster again and aggregates its node labels onto the newer one."""
    zone = "node.clusternet.io/zone"
    identity = single_cluster("edge", None, {"env": "test"}, ClusterSyncMode.PULL)
    enrollment = Enrollment(RegistrationSettings(await hub.token(), tmp_path / "state"), identity)
    await enrollment.connect_url(hub.secure.server.url)
    assert enrollment.created is not None and enrollment.created.metadata.resource_version
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    changed = enrollment.created.model_copy(deep=True)
    changed.metadata.labels = {**changed.labels, "team": "edge-ops"}
    await clusters.update(changed)

    sizing = Sizing(nodes=2, node_labels=({zone: "a"}, {zone: "a"}))
    agent = ClusterAgent(identity, SimCluster("edge", sizing), 5.0, enrollment=enrollment)
    try:
        with structlog.testing.capture_logs() as logs:
            await agent.start(CommonOptions(nats_url=hub.secure.server.url, health_port=-1, jetstream_domain="hub"))
            await eventually(lambda: agent.ready, timeout=20, what="agent ready")
        assert [e for e in logs if e["event"] == "heartbeat.failed"] == []  # the lost race cost no failed round
        cluster = await clusters.get(identity.namespace, "edge")
        assert cluster is not None
        assert (cluster.labels["team"], cluster.labels[zone], cluster.labels["env"]) == ("edge-ops", "a", "test")
    finally:
        await agent.stop()


async def test_an_agent_upgraded_from_a_credentials_file_is_still_its_cluster(
    hub: RegistrationHub, tmp_path: Path
) -> None:
    """Credentials an earlier agent kept in `<state-dir>/<cluster>/credentials.json` are read once
    and copied into the database: the hub refuses a second claim on a registered id, so an
    upgraded agent that did not find them would be locked out of its own cluster."""
    token = await hub.token()
    settings = RegistrationSettings(token, tmp_path / "state")
    agent = await run_agent(hub, settings)
    namespace = agent.identity.namespace
    await agent.stop()
    kept = saved_credentials(tmp_path / "state")["edge"]
    for path in (tmp_path / "state").glob(f"{CREDENTIALS_DATABASE}*"):
        path.unlink()
    (tmp_path / "state" / "edge").mkdir(parents=True, exist_ok=True)
    (tmp_path / "state" / "edge" / LEGACY_CREDENTIALS_FILE).write_text(kept.model_dump_json(by_alias=True))

    await token_store(hub.nc.jetstream()).delete(token.split(".")[0])  # only the kept secret can connect
    agent = await run_agent(hub, settings)
    assert agent.identity.namespace == namespace
    await agent.stop()
    assert saved_credentials(tmp_path / "state")["edge"] == kept


@pytest.mark.parametrize("filed", [False, True], ids=["claim-never-filed", "approved-before-kept"])
async def test_an_agent_restarted_before_it_kept_its_approval_registers_with_no_refused_secret(
    hub: RegistrationHub, tmp_path: Path, filed: bool
) -> None:
    """An agent keeps its secret before it asks. Killed before it kept the answer, it does not
    know whether the hub filed its claim: it asks with the token first, then its secret, and a
    refused password is not tried again in the round. So a claim the hub never saw registers with
    no refusal at all, and one the hub approved with one (the token, for an id already
    registered): refusals count against the source a fleet behind one address shares, and a fleet
    retrying its unknown secrets was throttled for minutes after a power cut
    (tests/registration/test_power_cut.py)."""
    settings = RegistrationSettings(await hub.token(), tmp_path / "state")
    identity = single_cluster("edge", None, {"env": "test"}, ClusterSyncMode.PULL)
    secret = new_secret()
    if filed:
        agent = await run_agent(hub, settings)
        await agent.stop()
        secret = saved_credentials(tmp_path / "state")["edge"].secret
    database = opened(tmp_path / "state" / CREDENTIALS_DATABASE)
    try:  # what it kept before asking: its id and secret, no namespace yet
        kept_before_asking = SavedCredentials(cluster_id=identity.cluster_id, secret=secret)
        await database.put("edge", kept_before_asking.model_dump(mode="json", by_alias=True, exclude_none=True))
    finally:
        await closed(database)

    refused = hub.callout.stats.refused
    agent = await run_agent(hub, settings)
    await agent.stop()
    assert hub.callout.stats.refused - refused == (1 if filed else 0)
    kept = saved_credentials(tmp_path / "state")["edge"]
    assert (kept.secret, kept.namespace) == (secret, identity.namespace), "the same claimant, now registered"


async def test_a_deleted_clusters_agent_left_running_does_not_get_its_address_throttled(
    hub: RegistrationHub, tmp_path: Path
) -> None:
    """Deleting a ManagedCluster revokes its credentials and kicks its agent, which may well go on
    running. It asks again ever more slowly (runtime/connection.py: REFUSED_BASE, REFUSED_CAP),
    not four times a second for good: the callout counts every refusal against the address it
    comes from and refuses the whole address after `source_failures` within `source_window`,
    which would lock out every other cluster behind it (a site's NAT), a new one too."""
    agent = await run_agent(hub, RegistrationSettings(await hub.token(), tmp_path / "state"))
    try:
        clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
        refused = hub.callout.stats.refused
        assert await clusters.delete(agent.identity.namespace, "edge")
        await eventually(lambda: hub.callout.stats.refused > refused, 10, what="the deleted cluster refused")
        refused = hub.callout.stats.refused
        limits = hub.callout.limits
        await asyncio.sleep(limits.source_window)  # the window the callout counts refusals over
        assert hub.callout.stats.refused - refused < limits.source_failures // 2
        assert hub.callout.stats.throttled == 0

        # Another cluster on the same address registers meanwhile.
        reply, _ = await register(hub.secure.server.url, new_cluster_id(), await hub.token())
        assert reply.result == APPROVED, reply.error_message
    finally:
        await agent.stop()

"""Liveness apart from status: a steady cluster writes nothing, forged heartbeats count for nothing,
and a hub restart neither marks healthy clusters Unknown nor forgets a dead one.

Real nats-server (private: the controller judges every cluster on its server), the hub's
cluster-health controller and simulated clusters' agents reporting every second, so a cluster
not heard from for 3 s is Unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import structlog
import structlog.testing
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.agent.registration import Enrollment, RegistrationSettings
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.heartbeat import ClusterHeartbeat, heartbeat_subject
from clusternet_nats.api.meta import ConditionStatus
from clusternet_nats.api.subjects import LEASES_BUCKET
from clusternet_nats.hub.registration.testing import RegistrationHub
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.partitions import DEFAULT_PARTITIONS, ReplicaOptions, partition_of
from clusternet_nats.runtime.service import CommonOptions, serve
from clusternet_nats.store import JsonBucket
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.js import JetStreamContext

from tests.clusterhealth.harness import Watch, build_health
from tests.registration.harness import hub

__all__ = ["hub"]

STATUS_STREAM = "KV_managedclusters-status"
GRACE = 3.0
"""3 missed heartbeats at the agents' 1 s frequency."""


def options(prefix: str) -> AgentOptions:
    return AgentOptions(cluster_name=f"{prefix}{uuid.uuid4().hex[:8]}", report_frequency=1.0)


async def last_seq(js: JetStreamContext) -> int:
    return int((await js.stream_info(STATUS_STREAM)).state.last_seq)


async def test_a_steady_cluster_stays_ready_and_writes_nothing(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    agent = options("s")
    watch = Watch(private_js, agent)
    async with (
        running_service("hub", build_health, private_nats.url),
        running_service("agent", Agent(agent).build, private_nats.url),
    ):
        await eventually(lambda: watch.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
        before = await last_seq(private_js)

        async def ready_and_unwritten() -> bool:
            ready = await watch.ready_is(ConditionStatus.TRUE) is not None
            return ready and await last_seq(private_js) == before

        # Twice the grace: without heartbeats counting, the stored lastObservedTime alone would
        # have made it Unknown (a write, and Ready not True).
        await holds(ready_and_unwritten, 2 * GRACE, "Ready True with the status stream unchanged")
        assert await watch.untainted()


async def test_forged_heartbeats_do_not_keep_a_dead_cluster_alive(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    """In registration mode NATS lets a cluster publish only on its own subject (tests/subjects);
    the hub also checks each heartbeat's payload against the subject and the ManagedCluster."""
    victim, forger = options("v"), options("f")
    victim_watch, forger_watch = Watch(private_js, victim), Watch(private_js, forger)
    victim_id, forger_id = victim_watch.ident.cluster_id, forger_watch.ident.cluster_id
    conn = Connection(private_nats.url, "forger")
    nc = await conn.connect(timeout=10)
    async with running_service("hub", build_health, private_nats.url):
        async with running_service("agents", Agent(victim).build, private_nats.url):
            await eventually(lambda: victim_watch.ready_is(ConditionStatus.TRUE), 10, what="victim Ready")
        ns = victim_watch.ident.namespace
        forged = [
            # Its own subject, the victim's id and name in the payload.
            (heartbeat_subject(forger_watch.ident.namespace, forger_id), victim_watch.ident.name, victim_id),
            # Its own id throughout, naming the victim's ManagedCluster.
            (heartbeat_subject(ns, forger_id), victim_watch.ident.name, forger_id),
            # The victim's subject and name, its own id in the payload.
            (heartbeat_subject(ns, victim_id), victim_watch.ident.name, forger_id),
        ]

        async def forge() -> None:
            while True:
                for subject, name, cluster_id in forged:
                    beat = ClusterHeartbeat(cluster_id=cluster_id, name=name, status_revision=10**6)
                    await nc.publish(subject, beat.to_json())
                await nc.publish(heartbeat_subject(ns, victim_id), b'{"clusterId": 7}')  # malformed
                await nc.publish(heartbeat_subject(ns, victim_id), b"x" * 4096)  # oversized
                await asyncio.sleep(0.2)  # the forger's pace, not a synchronisation

        forging = asyncio.create_task(forge())
        try:
            with structlog.testing.capture_logs() as logs:
                await victim_watch.goes_unknown_and_tainted()
            reasons = {e["reason"] for e in logs if e["event"] == "clusterhealth.heartbeat_refused"}
            assert reasons >= {
                "clusterId is not the subject's",
                f"ManagedCluster {victim_watch.key} has another spec.clusterId",
                "invalid: clusterId: Input should be a valid string",
                "over 1024 bytes",
            }, reasons
            # The hub survived all of it: a real cluster still comes up.
            async with running_service("agents", Agent(forger).build, private_nats.url):
                await eventually(lambda: forger_watch.ready_is(ConditionStatus.TRUE), 10, what="forger's own Ready")
            assert await victim_watch.ready_is(ConditionStatus.UNKNOWN) is not None
        finally:
            forging.cancel()
            await conn.close()


async def test_a_hub_restart_keeps_healthy_clusters_ready_and_still_finds_dead_ones(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    healthy, dying = options("h"), options("d")
    healthy_watch, dying_watch = Watch(private_js, healthy), Watch(private_js, dying)
    async with running_service("agents", Agent(healthy).build, private_nats.url):
        async with (
            running_service("hub", build_health, private_nats.url),
            running_service("agents", Agent(dying).build, private_nats.url),
        ):
            for watch in (healthy_watch, dying_watch):
                await eventually(lambda w=watch: w.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
        # The hub is down and so is one cluster; both stored statuses grow older than the grace.
        stored = await healthy_watch.ready_is(ConditionStatus.TRUE)
        assert stored is not None and stored.last_observed_time is not None
        older = stored.last_observed_time.timestamp() + GRACE + 1
        await eventually(lambda: time.time() > older, 10, what="the stored statuses older than the grace")
        async with running_service("hub", build_health, private_nats.url):
            await dying_watch.goes_unknown_and_tainted()
            await holds(
                lambda: healthy_watch.ready_is(ConditionStatus.TRUE), 2 * GRACE, "the healthy cluster stays Ready"
            )
            assert await healthy_watch.untainted()


async def test_a_registered_cluster_heartbeats_on_its_own_subject_and_writes_nothing(
    hub: RegistrationHub, tmp_path: Path
) -> None:
    """Registration mode: the heartbeat passes the permissions the callout grants the cluster
    (its own subject only), and a steady registered cluster stays Ready without status writes."""
    identity = single_cluster("steady", None, {}, ClusterSyncMode.PULL)
    settings = RegistrationSettings(await hub.token(), tmp_path / "state")
    agent = ClusterAgent(identity, SimCluster("steady", Sizing()), 1.0, enrollment=Enrollment(settings, identity))
    js = hub.nc.jetstream()
    async with running_service("hub", build_health, hub.secure.url("hub")):
        await agent.start(CommonOptions(nats_url=hub.secure.server.url, health_port=-1, jetstream_domain="hub"))
        try:
            await eventually(lambda: agent.ready, timeout=20, what="agent registered")
            watch = Watch(js, agent.identity)
            await eventually(lambda: watch.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
            before = await last_seq(js)

            async def ready_and_unwritten() -> bool:
                return await watch.ready_is(ConditionStatus.TRUE) is not None and await last_seq(js) == before

            await holds(ready_and_unwritten, 2 * GRACE, "Ready True with the status stream unchanged")
        finally:
            await agent.stop()


@contextlib.asynccontextmanager
async def health_replica(url: str, replica_id: str) -> AsyncIterator[None]:
    """One replica of the hub's cluster health, sharing the clusters' keys with the others."""
    stop = asyncio.Event()
    replicas = ReplicaOptions(replica_id=replica_id, lease_duration=1.0)
    options = CommonOptions(nats_url=url, health_port=-1, replicas=replicas)
    task = asyncio.create_task(serve("hub", options, build_health, stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 45)


async def owner(js: JetStreamContext, key: str) -> str:
    """The replica id holding the cluster-health partition of `key`."""
    held = await JsonBucket(js, LEASES_BUCKET).get(f"hub.partitions.{partition_of(key, DEFAULT_PARTITIONS)}")
    assert held is not None, f"no replica holds the partition of {key}"
    return held[0].decode().split("/")[0]


async def test_a_replica_taking_over_already_knows_when_each_cluster_was_heard_from(
    private_nats: NatsServer, private_js: JetStreamContext
) -> None:
    """Every replica hears every heartbeat: when the replica owning a cluster stops, the one taking
    it over does not mistake its aged stored status for silence, and still finds it when it dies."""
    agent = options("r")
    watch = Watch(private_js, agent)
    async with contextlib.AsyncExitStack() as one, contextlib.AsyncExitStack() as two:
        replicas = {"one": one, "two": two}
        for name, stack in replicas.items():
            await stack.enter_async_context(health_replica(private_nats.url, name))
        async with running_service("agent", Agent(agent).build, private_nats.url):
            await eventually(lambda: watch.ready_is(ConditionStatus.TRUE), 10, what="Ready True")
            stored = await watch.ready_is(ConditionStatus.TRUE)
            assert stored is not None and stored.last_observed_time is not None
            older = stored.last_observed_time.timestamp() + GRACE + 1
            await eventually(lambda: time.time() > older, 10, what="the stored status older than the grace")
            before = await last_seq(private_js)
            await replicas[await owner(private_js, watch.key)].aclose()  # the other takes the cluster over

            async def ready_and_unwritten() -> bool:
                return await watch.ready_is(ConditionStatus.TRUE) is not None and await last_seq(private_js) == before

            await holds(ready_and_unwritten, 2 * GRACE, "Ready True with the status stream unchanged")
        await watch.goes_unknown_and_tainted()

"""Three replicas of every hub-side service on a 3-node JetStream cluster (R3, the leases bucket
too): a NATS server and one replica of each service SIGKILLed right after `cnet apply`. While the
leases' stream elects a leader nobody can renew, so every replica pauses; then they carry on, the
dead replicas' partitions are taken over, and the rollout completes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clusternet_nats.testing.natsserver import NatsCluster
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually

from ..e2e.conftest import HubClient
from ..e2e.conftest import hub as hub  # the admin session on this module's system
from ..natscluster.test_rollout import CLUSTERS, converged
from .test_system import REPLICAS, VICTIMS, apply, taken_over


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("replicas-r3"), sim_clusters=CLUSTERS, replicas=REPLICAS, nats_cluster=3)
    sut.start(timeout=120)
    yield sut
    sut.stop()


async def test_a_nats_server_and_a_replica_of_each_killed_mid_rollout(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    assert isinstance(system.nats, NatsCluster)
    apply(system, tmp_path, ["r3-replicas"])
    system.nats.servers[0].kill()
    for victim in VICTIMS:
        system.services[victim].kill()
    await eventually(
        lambda: converged(hub, "r3-replicas"), 120, what="rollout with a server and replicas down"
    )
    for service_name in ("hub", "scheduler", "deployer"):
        await eventually(
            lambda s=service_name: taken_over(system, s), 60, what=f"{service_name}'s partitions taken over"
        )
    for name, service in system.services.items():
        assert name in VICTIMS or service.running, f"{name} died:\n{service.log_tail()}"
    system.nats.servers[0].start()
    system.nats.wait_meta_leader()

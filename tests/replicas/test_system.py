"""Three replicas of every hub-side service (hub, scheduler, deployer, predictor) as processes:
rollouts to simulated clusters, one replica of each SIGKILLed in the middle of one. Every
Description reaches Success; none is written twice with the same content (every write the
descriptions bucket accepted is recorded by a consumer from before the first apply), nor even
attempted twice (a core subscription sees the compare-and-set losers too, which is how two
deployer replicas rendering the same Description would show) but where the killed deployer's
in-flight work was done again by the next holder; the dead replicas' partitions all end with
the living ones.

The bridge shares work through the same queues (it is a ServiceContext like the others); it
needs a parent kube-apiserver and is left out here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from clusternet_nats.api.subjects import LEASES_BUCKET
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.runtime.partitions import DEFAULT_PARTITIONS, partition_of
from clusternet_nats.store.keys import kv_stream, kv_subject_prefix
from clusternet_nats.store.kv import JsonBucket, is_deletion
from clusternet_nats.testing.system import HUB_SIDE_SERVICES, ServiceProcess, System
from clusternet_nats.testing.waiting import eventually
from nats.js.api import DeliverPolicy
from nats.js.errors import ServiceUnavailableError
from prometheus_client.parser import text_string_to_metric_families

from ..e2e.conftest import HubClient, cnet
from ..e2e.conftest import hub as hub  # the admin session on this module's system
from ..natscluster.test_rollout import CLUSTERS, converged, write_app

REPLICAS = 3
APPS_BEFORE, APPS_AFTER = 6, 3
VICTIMS = tuple(f"{service}-2" for service in HUB_SIDE_SERVICES)


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("replicas"), sim_clusters=CLUSTERS, replicas=REPLICAS)
    sut.start(timeout=120)
    yield sut
    codes = sut.stop()
    assert all(code in (0, None) for code in codes.values()), f"services must exit 0 on SIGTERM: {codes}"


class Writes:
    """Writes of the descriptions bucket: those JetStream accepted (from an ordered consumer) or
    every one attempted (from a core subscription, which sees compare-and-set losers too)."""

    def __init__(self) -> None:
        self.data: list[tuple[str, bytes]] = []
        self._prefix = kv_subject_prefix("descriptions")

    async def record(self, msg: Any) -> None:
        if not is_deletion(msg.headers):
            self.data.append((msg.subject[len(self._prefix) :], msg.data))

    def twice(self) -> list[str]:
        """Keys written twice with the same content: the same work done again."""
        return sorted(key for (key, _), n in Counter(self.data).items() if n > 1)

    def keys_twice(self, exempt: Callable[[bytes], bool]) -> list[str]:
        """Keys written more than once at all (each is rendered once per rollout), but `exempt` ones."""
        counts = Counter(key for key, data in self.data if not exempt(data))
        return sorted(key for key, n in counts.items() if n > 1)


def subscription_partition(description: bytes) -> int:
    """The partition of the Subscription a Description was rendered from (the deployer's key)."""
    labels = json.loads(description)["metadata"]["labels"]
    key = f"{labels['apps.clusternet.io/subs.namespace']}.{labels['apps.clusternet.io/subs.name']}"
    return partition_of(key, DEFAULT_PARTITIONS)


async def holders(system: System, service: str) -> dict[str, str]:
    """Partition -> holding replica id of one service, from the leases bucket."""
    nc = await nats.connect(servers=system.nats_url.split(","))
    try:
        entries = await JsonBucket(nc.jetstream(), LEASES_BUCKET).entries(f"clusternet-{service}.partitions.>")
    finally:
        await nc.close()
    return {key.rsplit(".", 1)[1]: value.decode().split("/", 1)[0] for key, value, _ in entries}


def apply(system: System, tmp_path: Path, names: list[str]) -> None:
    for name in names:
        result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
        assert result.returncode == 0, result.stderr


async def test_replicas_share_the_work_and_survive_one_killed_mid_rollout(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    for service in ("hub", "scheduler", "deployer"):  # the predictor has no queues: queue groups
        await eventually(
            lambda service=service: _shared(system, service), 30, what=f"{service}'s partitions spread over replicas"
        )
        await eventually(
            lambda service=service: _reported(system, service), 30, what=f"{service}'s replicas report their share"
        )
    writes, attempts = Writes(), Writes()
    nc = await nats.connect(system.nats_url)
    subject = f"{kv_subject_prefix('descriptions')}>"
    sub = await nc.jetstream().subscribe(
        subject,
        stream=kv_stream("descriptions"),
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.NEW,
        cb=writes.record,
    )
    tries = await nc.subscribe(subject, cb=attempts.record)
    await barrier(nc)  # `apply` blocks the loop: both subscriptions must be in place before
    try:
        before = [f"replicas-{i}" for i in range(APPS_BEFORE)]
        apply(system, tmp_path, before)
        # What the killed deployer held: its in-flight work is done again by the next holder.
        held = await holders(system, "deployer")
        victim_partitions = {int(p) for p, holder in held.items() if holder == "deployer-2"}
        for victim in VICTIMS:
            system.services[victim].kill()
        after = [f"replicas-after-{i}" for i in range(APPS_AFTER)]
        apply(system, tmp_path, after)
        for name in before + after:
            await eventually(lambda name=name: converged(hub, name), 120, what=f"{name} rolled out everywhere")
        for service in ("hub", "scheduler", "deployer"):
            held = await eventually(
                lambda service=service: taken_over(system, service), 60, what=f"{service}'s partitions taken over"
            )
            assert set(held.values()) <= {f"{service}", f"{service}-3"}
        await eventually(lambda: len(writes.data) >= CLUSTERS * (APPS_BEFORE + APPS_AFTER), 30, what="writes seen")
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
            await tries.unsubscribe()
        await nc.close()
    assert writes.twice() == [], "a Description was written twice with the same content"
    # Without partitions every deployer replica renders every Description and all but one lose
    # the compare-and-set: attempts show it (accepted writes do not).
    again = attempts.keys_twice(exempt=lambda data: subscription_partition(data) in victim_partitions)
    assert again == [], "two deployer replicas rendered the same Description"
    for victim in VICTIMS:  # the survivors carried on: nothing else died
        assert not system.services[victim].running
    for name, service in system.services.items():
        assert name in VICTIMS or service.running, f"{name} died:\n{service.log_tail()}"


async def _shared(system: System, service: str) -> bool:
    held = Counter((await holders(system, service)).values())
    return len(held) == REPLICAS and sum(held.values()) == DEFAULT_PARTITIONS


async def _reported(system: System, service: str) -> bool:
    """Every replica's `cnet_partitions_owned` is its share, and the shares add up to all."""
    owned = [
        await asyncio.to_thread(_partitions_owned, process)
        for name, process in system.services.items()
        if name == service or name.startswith(f"{service}-")
    ]
    return len(owned) == REPLICAS and all(owned) and sum(owned) == DEFAULT_PARTITIONS


def _partitions_owned(process: ServiceProcess) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{process.health_port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    for family in text_string_to_metric_families(text):
        if family.name == "cnet_partitions_owned":
            return int(sum(sample.value for sample in family.samples))
    return 0


async def taken_over(system: System, service: str) -> dict[str, str] | None:
    try:
        held = await holders(system, service)
    except (nats.errors.TimeoutError, ServiceUnavailableError):
        return None  # the leases stream is electing a leader (a server was killed): ask again
    return held if len(held) == DEFAULT_PARTITIONS and f"{service}-2" not in held.values() else None


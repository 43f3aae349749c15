"""A power cut in the middle of a registration storm: nats-server, the hub and the agents' process
SIGKILLed in the same moment while clusters are registering, every process as deployed (the
secured hub's auth callout, the hub in registration mode, an agent process of simulated clusters
holding only a bootstrap token). Started again, every cluster registers exactly once: one
ManagedCluster each, in the namespace the agent kept, its credential approved, and none refused as
another agent's (a claim filed before the cut is finished with the secret the agent kept).
"""

from __future__ import annotations

import asyncio
import signal
from datetime import timedelta
from pathlib import Path

import nats
from clusternet_nats.agent.registration import saved_credentials
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain.readiness import is_ready
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.records import (
    credential_store,
    ensure_registration_buckets,
    new_token,
    token_store,
)
from clusternet_nats.store import ObjectStore, StatusStore, ensure_buckets
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.securehub import SecureHub
from clusternet_nats.testing.system import ServiceProcess, ensure_admin_token, wait_ready
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

CLUSTERS = 300
STATUS_BUCKET = by_kind(ManagedCluster.KIND).status_bucket or ""


def _process(name: str, directory: Path, args: list[str], env: dict[str, str]) -> ServiceProcess:
    return ServiceProcess(
        name=name,
        module=f"clusternet_nats.{name}",
        args=[*args, "--log-level", "warning"],
        log_path=directory / f"{name}.log",
        health_port=free_port(),
        env=env,
        simulated_clusters=name == "agent",
    )


async def _ready_clusters(nc: NATS) -> set[str]:
    statuses = StatusStore(nc.jetstream(), STATUS_BUCKET, ManagedClusterStatus)
    return {key for key, data, _ in await statuses.bucket.entries() if is_ready(statuses.decode(data))}


async def test_a_registration_storm_cut_midway_registers_every_cluster_once(tmp_path: Path) -> None:
    seed = jwt.new_account_seed()
    secure = SecureHub(tmp_path, seed, jwt.public_key(seed))
    secure.server.start()
    common = ["--nats-url", secure.url("hub"), "--jetstream-domain", "hub"]
    env = {"XDG_STATE_HOME": str(tmp_path)}  # where the hub keeps the CA it generates
    nc = await nats.connect(secure.url("hub"))
    processes: list[ServiceProcess] = []
    try:
        js = nc.jetstream()
        await ensure_buckets(js)
        await ensure_registration_buckets(js)
        token, record = new_token(timedelta(hours=1))
        await token_store(js).put(record.token_id, record, 0)
        ensure_admin_token(tmp_path / "hub-tokens.csv")
        hub = _process(
            "hub",
            tmp_path,
            [
                *common,
                *("--issuer-seed", seed, "--callout-url", secure.url("callout"), "--system-url", secure.url("sys")),
                *("--listen", f"127.0.0.1:{free_port()}", "--cert-dir", str(tmp_path / "hub-certs")),
                *("--token-auth-file", str(tmp_path / "hub-tokens.csv")),
            ],
            env,
        )
        state = tmp_path / "agent-state"
        agent = _process(
            "agent",
            tmp_path,
            [
                *common,
                *("--cluster-name", "storm", "--sim-clusters", str(CLUSTERS)),
                *("--bootstrap-token", token, "--state-dir", str(state)),
            ],
            env,
        )
        processes = [hub, agent]
        hub.start()
        await asyncio.to_thread(wait_ready, [hub], 60)

        filed: set[str] = set()
        cut = asyncio.Event()

        async def status_filed(msg: Msg) -> None:
            filed.add(msg.subject)
            if len(filed) >= CLUSTERS // 4:
                cut.set()

        await nc.subscribe(f"$KV.{STATUS_BUCKET}.>", cb=status_filed)
        agent.start()
        await asyncio.wait_for(cut.wait(), 120)
        # A quarter of the clusters registered: every process dies in the same moment.
        assert secure.server.proc is not None and hub.proc is not None and agent.proc is not None
        for proc in (secure.server.proc, hub.proc, agent.proc):
            proc.send_signal(signal.SIGKILL)
        hub.kill()
        agent.kill()
        secure.server.kill()
        await nc.close()

        secure.server.start()
        nc = await nats.connect(secure.url("hub"))
        ready_at_cut = await _ready_clusters(nc)
        assert len(ready_at_cut) < CLUSTERS, "the storm was over before the cut: nothing was cut midway"
        hub.start()
        agent.start()
        await asyncio.to_thread(wait_ready, [hub], 60)
        ready = await eventually(
            lambda: _all_ready(nc), 120, interval=0.5, what=f"all {CLUSTERS} clusters Ready after the cut"
        )
        assert ready_at_cut <= ready

        clusters: ObjectStore[ManagedCluster] = ObjectStore(nc.jetstream(), by_kind(ManagedCluster.KIND))
        registered = await clusters.list()
        names = sorted(c.metadata.name or "" for c in registered)
        assert names == sorted(f"storm-{n}" for n in range(1, CLUSTERS + 1)), "one ManagedCluster per cluster"
        assert len({c.spec.cluster_id for c in registered}) == CLUSTERS
        kept = saved_credentials(state)
        assert {name: saved.namespace for name, saved in kept.items()} == {
            c.metadata.name: c.metadata.namespace for c in registered
        }, "each agent's kept namespace is its ManagedCluster's"
        credentials = credential_store(nc.jetstream())
        entries = await credentials.bucket.entries()
        assert len(entries) == CLUSTERS
        assert all(credentials.decode(data).approved for _, data, _ in entries)
        assert "already registered by another agent" not in agent.log_path.read_text()
        # Asking again cost no flood of refusals: the address the fleet shares was never throttled.
        assert "callout.source_throttled" not in hub.log_path.read_text()
    finally:
        for process in processes:
            process.kill()
        await nc.close()
        secure.server.cleanup()


async def _all_ready(nc: NATS) -> set[str] | None:
    ready = await _ready_clusters(nc)
    return ready if len(ready) == CLUSTERS else None

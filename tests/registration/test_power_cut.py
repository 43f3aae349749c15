"""Power cuts on the hub as deployed: nats-server (the shipped secured configuration, its auth
callout), the hub in registration mode, the scheduler, deployer and predictor, and an agent
process of simulated clusters holding only a bootstrap token, every one SIGKILLed in the same
moment, then all started again.

Cut in the middle of a registration storm, every cluster registers exactly once: one
ManagedCluster each, in the namespace the agent kept, its credential approved, none refused as
another agent's, and the address the fleet shares never throttled. Cut in the middle of a rollout,
where every agent write is a request to the hub's intake, the rollout completes with exactly one
Base and one Description per cluster.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import nats
import pytest
from clusternet_nats.agent.registration import saved_credentials
from clusternet_nats.api.apps import Base, Description, DescriptionPhase, DescriptionStatus, SubscriptionStatus
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.cli import config as cnet_config
from clusternet_nats.domain.readiness import is_ready
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.records import (
    credential_store,
    ensure_registration_buckets,
    new_token,
    token_store,
)
from clusternet_nats.store import JsonBucket, ObjectStore, StatusStore, ensure_buckets
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.securehub import SecureHub
from clusternet_nats.testing.system import ServiceProcess, ensure_admin_token, wait_ready
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.e2e.conftest import write_app

STATUS_BUCKET = by_kind(ManagedCluster.KIND).status_bucket or ""
HUB_SIDE = ("hub", "scheduler", "deployer", "predictor")


class Deployment:
    """The secured nats-server and every service, as processes, with one agent process of
    `clusters` simulated clusters; `nc` is a hub-side connection to the store."""

    def __init__(self, directory: Path, clusters: int) -> None:
        self.directory, self.clusters = directory, clusters
        self.seed = jwt.new_account_seed()
        self.secure = SecureHub(directory, self.seed, jwt.public_key(self.seed))
        self.state = directory / "agent-state"
        self.hub_port = free_port()
        self.nc: NATS | None = None
        self.services: dict[str, ServiceProcess] = {}
        self.agent: ServiceProcess | None = None

    async def start(self) -> None:
        self.secure.server.start()
        self.nc = await nats.connect(self.secure.url("hub"))
        js = self.nc.jetstream()
        await ensure_buckets(js)
        await ensure_registration_buckets(js)
        token, record = new_token(timedelta(hours=1))
        await token_store(js).put(record.token_id, record, 0)
        admin = ensure_admin_token(self.directory / "hub-tokens.csv")
        common = ["--nats-url", self.secure.url("hub"), "--jetstream-domain", "hub"]
        hub = [
            *("--issuer-seed", self.seed, "--callout-url", self.secure.url("callout")),
            *("--system-url", self.secure.url("sys"), "--listen", f"127.0.0.1:{self.hub_port}"),
            *("--cert-dir", str(self.directory / "hub-certs")),
            *("--token-auth-file", str(self.directory / "hub-tokens.csv")),
        ]
        self.services = {name: self._process(name, [*common, *(hub if name == "hub" else [])]) for name in HUB_SIDE}
        cluster_args = ["--cluster-name", "cut", "--sim-clusters", str(self.clusters)]
        self.agent = self._process(
            "agent", [*common, *cluster_args, "--bootstrap-token", token, "--state-dir", str(self.state)]
        )
        for service in self.services.values():
            service.start()
        await asyncio.to_thread(wait_ready, list(self.services.values()), 90)
        hub_ca = str(self.directory / "hub-certs" / "ca.crt")
        cluster = cnet_config.Cluster(server=f"https://127.0.0.1:{self.hub_port}", certificate_authority=hub_ca)
        cnet_config.write_context(self.cnet_config, "hub", cluster, cnet_config.User(token=admin))

    @property
    def cnet_config(self) -> Path:
        return self.directory / "cnet-config"

    def _process(self, name: str, args: list[str]) -> ServiceProcess:
        return ServiceProcess(
            name=name,
            module=f"clusternet_nats.{name}",
            args=[*args, "--log-level", "warning"],
            log_path=self.directory / f"{name}.log",
            health_port=free_port(),
            env={"XDG_STATE_HOME": str(self.directory)},  # where the hub keeps the CA it generates
            simulated_clusters=name == "agent",
        )

    def everything(self) -> list[ServiceProcess]:
        return [*self.services.values(), *([self.agent] if self.agent else [])]

    async def power_cut(self) -> None:
        """Every process SIGKILLed in the same moment; then nats-server started again, the store
        as the cut left it, for the test to read before `restart` starts every service."""
        running = [p.proc for p in self.everything() if p.proc is not None]
        assert self.secure.server.proc is not None and len(running) == len(self.everything())
        for proc in (self.secure.server.proc, *running):
            proc.send_signal(signal.SIGKILL)  # all signalled before any is waited for
        for process in self.everything():
            process.kill()
        self.secure.server.kill()
        assert self.nc is not None
        await self.nc.close()
        self.secure.server.start()
        self.nc = await nats.connect(self.secure.url("hub"))

    def restart(self) -> None:
        for process in self.everything():
            process.start()

    async def ready_clusters(self) -> set[str]:
        assert self.nc is not None
        statuses = StatusStore(self.nc.jetstream(), STATUS_BUCKET, ManagedClusterStatus)
        return {key for key, data, _ in await statuses.bucket.entries() if is_ready(statuses.decode(data))}

    async def all_ready(self) -> set[str] | None:
        ready = await self.ready_clusters()
        return ready if len(ready) == self.clusters else None

    async def stop(self) -> None:
        for process in self.everything():
            process.kill()
        if self.nc is not None:
            await self.nc.close()
        self.secure.server.cleanup()


@pytest.fixture
async def deployment(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Deployment]:
    running = Deployment(tmp_path, request.param)
    try:
        await running.start()
        yield running
    finally:
        await running.stop()


@pytest.mark.parametrize("deployment", [300], indirect=True)
async def test_a_registration_storm_cut_midway_registers_every_cluster_once(deployment: Deployment) -> None:
    assert deployment.nc is not None and deployment.agent is not None
    filed: set[str] = set()
    quarter = asyncio.Event()

    async def status_filed(msg: Msg) -> None:
        filed.add(msg.subject)
        if len(filed) >= deployment.clusters // 4:
            quarter.set()

    await deployment.nc.subscribe(f"$KV.{STATUS_BUCKET}.>", cb=status_filed)
    deployment.agent.start()
    await asyncio.wait_for(quarter.wait(), 120)
    await deployment.power_cut()
    ready_at_cut = await deployment.ready_clusters()
    assert len(ready_at_cut) < deployment.clusters, "the storm was over before the cut: nothing was cut midway"
    deployment.restart()
    ready = await eventually(deployment.all_ready, 120, interval=0.5, what="every cluster Ready after the cut")
    assert ready_at_cut <= ready

    js = deployment.nc.jetstream()
    registered = await ObjectStore(js, by_kind(ManagedCluster.KIND)).list()
    names = sorted(c.metadata.name or "" for c in registered)
    assert names == sorted(f"cut-{n}" for n in range(1, deployment.clusters + 1)), "one ManagedCluster per cluster"
    assert len({c.spec.cluster_id for c in registered}) == deployment.clusters
    kept = saved_credentials(deployment.state)
    assert {name: saved.namespace for name, saved in kept.items()} == {
        c.metadata.name: c.metadata.namespace for c in registered
    }, "each agent's kept namespace is its ManagedCluster's"
    credentials = credential_store(js)
    entries = await credentials.bucket.entries()
    assert len(entries) == deployment.clusters
    assert all(credentials.decode(data).approved for _, data, _ in entries)
    assert "already registered by another agent" not in deployment.agent.log_path.read_text()
    # Asking again cost no flood of refusals: the address the fleet shares was never throttled.
    assert "callout.source_throttled" not in deployment.services["hub"].log_path.read_text()


@pytest.mark.parametrize("deployment", [100], indirect=True)
async def test_a_rollout_cut_midway_completes_once_per_cluster(deployment: Deployment, tmp_path: Path) -> None:
    assert deployment.nc is not None and deployment.agent is not None
    deployment.agent.start()
    await eventually(deployment.all_ready, 120, interval=0.5, what="every cluster Ready")
    written = asyncio.Event()

    async def description_written(_msg: Msg) -> None:
        written.set()

    await deployment.nc.subscribe(f"$KV.{by_kind(Description.KIND).bucket}.>", cb=description_written)
    cnet = [str(Path(sys.executable).parent / "cnet"), "--config", str(deployment.cnet_config)]
    apply = [*cnet, "apply", "-f", str(write_app(tmp_path, "cut"))]
    result = await asyncio.to_thread(subprocess.run, apply, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    await asyncio.wait_for(written.wait(), 60)
    await deployment.power_cut()  # as the first Description is written

    js = deployment.nc.jetstream()  # a new connection, to the restarted server
    descriptions = JsonBucket(js, by_kind(Description.KIND).bucket)
    statuses = StatusStore(js, by_kind("Subscription").status_bucket or "", SubscriptionStatus)
    subscriptions = ObjectStore(js, by_kind("Subscription"))

    async def completed() -> SubscriptionStatus | None:
        status = await statuses.get(subscriptions.key("default", "cut"))
        done = status is not None and status.value.completed_releases == deployment.clusters
        return status.value if done else None

    assert await completed() is None, "the rollout was over before the cut: nothing was cut midway"
    deployment.restart()
    await eventually(completed, 120, interval=0.5, what="the rollout completed after the cut")
    assert len(await descriptions.keys()) == deployment.clusters, "one Description per cluster"
    assert len(await JsonBucket(js, by_kind(Base.KIND).bucket).keys()) == deployment.clusters, "one Base per cluster"
    phases = StatusStore(js, by_kind(Description.KIND).status_bucket or "", DescriptionStatus)
    assert {phases.decode(data).phase for _, data, _ in await phases.bucket.entries()} == {DescriptionPhase.SUCCESS}

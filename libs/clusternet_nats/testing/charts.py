"""Helm chart repositories of the test's own: a chart built by `helm package`, served as a classic
repository (index.yaml + archives over aiohttp, optional basic auth) and pushed with `helm push`
to an OCI registry process (CNCF distribution, built by hack/tools.sh like the other tools).

Both servers run outside the test's event loop (the repository on a thread of its own, the
registry as a process), so session-scoped fixtures (`chart_repo`, `oci_registry`) can share them
across tests whatever loop each test runs in. `stop()` and `start()` again on the same port let
a test take a repository down and bring it back.

    repo = ChartRepo(helm, tmp_path, auth=("user", "pass")).start()
    repo.add_chart(GREETER, "0.1.0")   # built, packaged, re-indexed
    repo.url                           # http://127.0.0.1:<port>/charts
"""

from __future__ import annotations

import asyncio
import base64
import subprocess
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from aiohttp import web
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.tools import Tools

GREETER = "greeter"
"""The test chart: a ConfigMap of `greeting` and a Deployment of `replicas` (values.yaml: 1)."""

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  chartVersion: {{ .Chart.Version | quote }}
"""

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: greeter
          image: {{ .Values.image | quote }}
          resources: {requests: {cpu: 10m, memory: 16Mi}}
"""

NOTES = "{{ .Chart.Name }} {{ .Chart.Version }} says {{ .Values.greeting }}\n"
VALUES = "greeting: hello\nreplicas: 1\nimage: nginx:1.27\n"


def run_helm(helm: Path, *args: str | Path) -> str:
    done = subprocess.run([str(helm), *map(str, args)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"helm {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def package_chart(helm: Path, workdir: Path, name: str, version: str, out: Path) -> Path:
    """Builds the test chart as `name` at `version` and packages it into `out`; the archive's path."""
    chart = workdir / "src" / f"{name}-{version}"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: {version}\n")
    (chart / "values.yaml").write_text(VALUES)
    (chart / "templates" / "configmap.yaml").write_text(CONFIGMAP)
    (chart / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    (chart / "templates" / "NOTES.txt").write_text(NOTES)
    out.mkdir(parents=True, exist_ok=True)
    run_helm(helm, "package", chart, "--destination", out)
    return out / f"{name}-{version}.tgz"


class ChartRepo:
    """A classic chart repository at `url` (…/charts), served from `workdir/charts`."""

    def __init__(self, helm: Path, workdir: Path, auth: tuple[str, str] | None = None, port: int | None = None):
        self.helm = helm
        self.workdir = workdir
        self.served = workdir / "charts"
        self.served.mkdir(parents=True, exist_ok=True)
        self.auth = auth
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/charts"
        self.requests = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    def add_chart(self, name: str, version: str) -> Path:
        archive = package_chart(self.helm, self.workdir, name, version, self.served)
        run_helm(self.helm, "repo", "index", self.served, "--url", self.url)
        return archive

    @web.middleware
    async def _gate(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        self.requests += 1
        if self.auth is not None:
            wanted = "Basic " + base64.b64encode(":".join(self.auth).encode()).decode()
            if request.headers.get("Authorization") != wanted:
                return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="charts"'})
        return await handler(request)

    def start(self) -> ChartRepo:
        ready = threading.Event()

        async def serve() -> None:
            app = web.Application(middlewares=[self._gate])
            app.router.add_static("/charts", self.served)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
            ready.set()

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            loop.run_until_complete(serve())
            loop.run_forever()
            assert self._runner is not None
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name=f"chart-repo-{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError(f"the chart repository on port {self.port} did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = self._thread = None


@contextmanager
def oci_registry_with(tools: Tools, workdir: Path, charts: dict[str, Sequence[str]]) -> Iterator[OciRegistry]:
    """A running registry holding each chart name at each of its versions (the test chart, packaged)."""
    registry = OciRegistry(tools.registry, tools.helm, workdir).start()
    try:
        for name, versions in charts.items():
            for version in versions:
                registry.push(package_chart(tools.helm, workdir, name, version, workdir / "packages"))
        yield registry
    finally:
        registry.stop()


class OciRegistry:
    """CNCF distribution's registry on 127.0.0.1 (plain HTTP); charts at `url` (oci://…/charts)."""

    def __init__(self, registry: Path, helm: Path, workdir: Path) -> None:
        self.binary = registry
        self.helm = helm
        self.workdir = workdir
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"oci://{self.host}/charts"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OciRegistry:
        config = self.workdir / "registry.yml"
        config.write_text(
            "version: 0.1\nlog: {level: error}\n"
            f"storage: {{filesystem: {{rootdirectory: {self.workdir / 'data'}}}}}\n"
            f"http: {{addr: '{self.host}'}}\n"
        )
        log = (self.workdir / "registry.log").open("wb")
        self._proc = subprocess.Popen([str(self.binary), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                output = (self.workdir / "registry.log").read_text()
                raise RuntimeError(f"the registry exited {self._proc.returncode}: {output}")
            try:
                with urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)  # polling a process we started for its port, not test synchronisation
        raise RuntimeError(f"the registry on {self.host} did not answer /v2/ in 15s")

    def push(self, archive: Path) -> None:
        run_helm(self.helm, "push", archive, self.url, "--plain-http")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None

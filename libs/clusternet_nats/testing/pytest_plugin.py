"""pytest fixtures: a real nats-server per test session, a connection per test.

Tests share one server and stay apart by using their own namespaces (`unique_ns`); a test
that restarts NATS asks for `private_nats` instead. Kubernetes control planes (`kube_parent`,
`kube_children`) are real etcd + kube-apiserver processes, started once per session and only
when a test asks for them; `kube_tools` builds the binaries first if they are not cached. Chart
sources (`chart_repo`: a classic repository, `oci_registry`: an OCI registry) serve the test
chart `greeter` 0.1.0 and 0.2.0 (testing/charts.py), also once per session and only when asked.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import structlog
from clusternet_nats.testing.charts import GREETER, ChartRepo, OciRegistry, oci_registry_with
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tools import Tools, ensure_tools
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext


def pytest_configure(config: pytest.Config) -> None:
    """In-process services log to the real stderr, bound once: structlog's default prints to
    whatever `sys.stdout` is when it logs, which inside a CLI test is the CLI's captured output,
    so a background service's line would land in the table a test reads."""
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.__stderr__))


@pytest.fixture(autouse=True)
def _logging_kept() -> Iterator[None]:
    """Puts structlog's and the root logger's configuration back after each test: one that runs a
    service's command in-process (CliRunner) configures logging as the service does, to the stderr
    of that moment, which would send every later test's background lines into its captured output."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    config = structlog.get_config()
    yield
    root.handlers, root.level = handlers, level
    structlog.configure(**config)


@pytest.fixture(scope="session")
def nats_server() -> Iterator[NatsServer]:
    server = NatsServer().start()
    yield server
    server.cleanup()


@pytest.fixture
def private_nats() -> Iterator[NatsServer]:
    server = NatsServer().start()
    yield server
    server.cleanup()


@pytest.fixture
async def nc(nats_server: NatsServer) -> AsyncIterator[NATS]:
    from clusternet_nats.runtime.connection import Connection

    conn = Connection(nats_server.url, "pytest")
    client = await conn.connect(timeout=10)
    yield client
    await conn.close()


@pytest.fixture
async def js(nc: NATS) -> JetStreamContext:
    from clusternet_nats.store import ensure_buckets

    context = nc.jetstream()
    await ensure_buckets(context)
    return context


@pytest.fixture
async def private_js(private_nats: NatsServer) -> AsyncIterator[JetStreamContext]:
    """JetStream on the test's own server (which it may restart), with every bucket created."""
    from clusternet_nats.runtime.connection import Connection
    from clusternet_nats.store import ensure_buckets

    conn = Connection(private_nats.url, "pytest")
    context = (await conn.connect(timeout=10)).jetstream()
    await ensure_buckets(context)
    yield context
    await conn.close()


@pytest.fixture
def unique_ns() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def kube_tools() -> Tools:
    return ensure_tools()


@pytest.fixture(scope="session")
def kube_parent(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    plane = ControlPlane("parent", kube_tools, tmp_path_factory.mktemp("kube-parent")).start()
    yield plane
    plane.stop()


@pytest.fixture(scope="session")
def kube_children(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ControlPlane]]:
    """Two child clusters, `child-1` and `child-2`."""
    planes: list[ControlPlane] = []
    try:
        for i in (1, 2):
            planes.append(ControlPlane(f"child-{i}", kube_tools, tmp_path_factory.mktemp(f"kube-child-{i}")).start())
        yield planes
    finally:
        for plane in planes:
            plane.stop()


CHART_VERSIONS = ("0.1.0", "0.2.0")


@pytest.fixture(scope="session")
def chart_repo(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChartRepo]:
    """A classic chart repository (no auth) serving `greeter` 0.1.0 and 0.2.0."""
    repo = ChartRepo(kube_tools.helm, tmp_path_factory.mktemp("chart-repo"))
    for version in CHART_VERSIONS:
        repo.add_chart(GREETER, version)
    yield repo.start()
    repo.stop()


@pytest.fixture(scope="session")
def oci_registry(kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OciRegistry]:
    """An OCI registry (plain HTTP) holding `greeter` 0.1.0 and 0.2.0 at `oci_registry.url`."""
    with oci_registry_with(kube_tools, tmp_path_factory.mktemp("oci-registry"), {GREETER: CHART_VERSIONS}) as registry:
        yield registry

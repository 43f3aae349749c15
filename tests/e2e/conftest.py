"""End-to-end fixtures: the whole system as processes, and a small hub client."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from clusternet_nats.agent.backends.sim.persistence import saved_states
from clusternet_nats.testing.system import System

REPO = Path(__file__).resolve().parents[2]
APPS = "/apis/apps.clusternet.io/v1alpha1"
CLUSTERS = "/apis/clusters.clusternet.io/v1beta1"


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("system"), sim_clusters=3)
    sut.start(timeout=90)
    yield sut
    codes = sut.stop()
    assert all(code == 0 for code in codes.values()), f"services must exit 0 on SIGTERM: {codes}"


class HubClient:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def get(self, path: str) -> Any:
        async with self.session.get(self.url + path) as resp:
            if resp.status == 404:
                return None
            resp.raise_for_status()
            return await resp.json()

    async def items(self, path: str) -> list[dict[str, Any]]:
        data = await self.get(path)
        return list(data["items"]) if data else []


@pytest.fixture
async def hub(system: System) -> AsyncIterator[HubClient]:
    """An admin session on the system's hub (its generated CA, the admin token)."""
    connector = aiohttp.TCPConnector(ssl=system.hub_ssl_context())
    async with aiohttp.ClientSession(headers=system.hub_headers(), connector=connector) as session:
        yield HubClient(session, system.hub_url)


def child_objects(system: System, cluster: str) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of what exists inside one simulated child, read from its state file."""
    state = saved_states(system.workdir / "agent-state").get(cluster)
    if state is None:
        return set()
    return {(o["ref"][1], o["ref"][2] or "", o["ref"][3]) for o in state["objects"]}


def owned_by(objects: list[dict[str, Any]], subscription: str) -> list[dict[str, Any]]:
    """Bases or Descriptions derived from one Subscription, found by Clusternet's label."""
    return [o for o in objects if o["metadata"]["labels"].get("apps.clusternet.io/subs.name") == subscription]


def cnet(system: System, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "cnet"), "--config", str(system.cnet_config), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


APP = """
apiVersion: v1
kind: Namespace
metadata: {{name: {name}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {name}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: nginx, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]
---
apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {{name: {name}, namespace: default}}
spec:
  subscribers:
    - clusterAffinity:
        matchExpressions: [{{key: clusters.clusternet.io/cluster-id, operator: Exists}}]
  feeds:
    - {{apiVersion: v1, kind: Namespace, name: {name}}}
    - {{apiVersion: apps/v1, kind: Deployment, name: web, namespace: {name}}}
"""


def write_app(tmp_path: Path, name: str) -> Path:
    """`APP` for a Subscription `name` (its Namespace too), as a file to apply."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(APP.format(name=name))
    return path

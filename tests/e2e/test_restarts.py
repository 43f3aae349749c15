"""Kill any one service, or restart NATS, during a rollout: the system converges, nothing is
lost and nothing is duplicated."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually

from .conftest import APPS, Hub, cnet, owned_by

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
    path = tmp_path / f"{name}.yaml"
    path.write_text(APP.format(name=name))
    return path


async def converged(hub: Hub, name: str, clusters: int = 3) -> dict[str, Any] | None:
    """Completed everywhere, with exactly one Base and one Description per cluster."""
    sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/{name}")
    status = (sub or {}).get("status") or {}
    if status.get("completedReleases") != clusters:
        return None
    owned = {kind: owned_by(await hub.items(f"{APPS}/{kind}"), name) for kind in ("bases", "descriptions")}
    if len(owned["bases"]) != clusters or len(owned["descriptions"]) != clusters:
        return None
    if {d["metadata"]["namespace"] for d in owned["descriptions"]} != {
        b["metadata"]["namespace"] for b in owned["bases"]
    }:
        return None
    return sub


@pytest.mark.parametrize("service", ["scheduler", "deployer", "predictor", "agent", "hub"])
async def test_killed_service_mid_rollout_converges(
    system: System, hub: Hub, tmp_path: Path, service: str
) -> None:
    name = f"kill-{service}"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
    assert result.returncode == 0, result.stderr
    system.services[service].kill()
    await system.wait_ready_async(30, tuple(n for n in system.services if n != service))
    system.services[service].start()
    await system.wait_ready_async(60, (service,))
    sub = await eventually(lambda: converged(hub, name), 60, what=f"{name} converged after killing {service}")
    assert len(sub["status"]["bindingClusters"]) == 3


async def test_nats_restart_every_service_resumes(system: System, hub: Hub, tmp_path: Path) -> None:
    system.nats.restart()
    back = time.monotonic()
    await system.wait_ready_async(30)
    resumed = time.monotonic() - back
    assert resumed < 5, f"services took {resumed:.1f}s to be ready again after NATS came back"
    name = "after-nats-restart"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
    assert result.returncode == 0, result.stderr
    await eventually(lambda: converged(hub, name), 30, what="rollout after a NATS restart")

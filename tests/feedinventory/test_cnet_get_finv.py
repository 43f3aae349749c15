"""`cnet get finv` against a hub: the hub writes the FeedInventory of an applied Subscription,
and cnet shows it as kubectl shows Clusternet's CRD (NAME and AGE; no other columns declared)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually

from tests.cli.conftest import run_cnet

OBJECTS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 4
  template:
    spec:
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: 250m}, limits: {memory: 64Mi}}
---
apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: web-sub, namespace: shop}
spec:
  subscribers: [{clusterAffinity: {}}]
  schedulingStrategy: Dividing
  dividingScheduling: {type: Dynamic, dynamicDividing: {strategy: Spread}}
  feeds: [{apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}]
"""


async def test_cnet_shows_the_feed_inventory(
    private_nats: NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CNET_CONFIG", str(tmp_path / "cnet-config"))
    (tmp_path / "web.yaml").write_text(OBJECTS)
    async with running_hub(private_nats.url) as hub:
        applied = await run_cnet(*hub.cnet_args(), "apply", "-f", str(tmp_path / "web.yaml"))
        assert applied.exit_code == 0, applied.output

        async def listed() -> list[str] | None:
            result = await run_cnet(*hub.cnet_args(), "get", "finv", "-n", "shop")
            lines = result.output.splitlines()
            return lines if result.exit_code == 0 and len(lines) == 2 else None

        lines = await eventually(listed, 10, what="the FeedInventory listed")
        assert lines is not None
        header, row = lines
        assert header.split() == ["NAME", "AGE"] and row.split()[0] == "web-sub"

        shown = await run_cnet(*hub.cnet_args(), "get", "feedinventories", "web-sub", "-n", "shop", "-o", "yaml")
        finv = yaml.safe_load(shown.output)
        assert finv["metadata"]["ownerReferences"][0]["name"] == "web-sub"
        (order,) = finv["spec"]["feeds"]
        assert (order["desiredReplicas"], order["replicaJsonPath"]) == (4, "/spec/replicas")
        assert order["replicaRequirements"]["resources"] == {
            "requests": {"cpu": "250m", "memory": "64Mi"},
            "limits": {"memory": "64Mi"},
        }

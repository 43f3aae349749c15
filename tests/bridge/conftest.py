"""A parent apiserver with our CRDs installed, and the bridge running in-process against it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.bridge.service import builder
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "crds"


class Parent:
    """The parent apiserver, spoken to with kubectl as a user would."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane

    async def kubectl(self, *args: str, input: str | None = None) -> str:
        result = await self.plane.kubectl_async(*args, input=input)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    async def get(self, *args: str) -> dict[str, Any] | None:
        result = await self.plane.kubectl_async("get", *args, "-o", "json")
        if result.returncode != 0:
            assert "NotFound" in result.stderr, result.stderr
            return None
        found: dict[str, Any] = json.loads(result.stdout)
        return found

    async def apply(self, manifest: str) -> None:
        await self.kubectl("apply", "-f", "-", input=manifest)


@pytest.fixture(scope="session")
async def parent(kube_parent: ControlPlane) -> Parent:
    plane = Parent(kube_parent)
    await plane.kubectl("apply", "-k", str(CRDS))
    await plane.kubectl("wait", "--for", "condition=established", "--timeout=60s", "crd", "--all")
    return plane


@pytest.fixture
async def bridge(parent: Parent, nats_server: NatsServer) -> AsyncIterator[None]:
    async with running_service("clusternet-bridge", builder(parent.plane.kubeconfig), nats_server.url):
        yield

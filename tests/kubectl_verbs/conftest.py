"""The real kubectl (built by `make tools`) against an in-process hub, as its admin."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import yaml
from clusternet_nats.hub.testing import ADMIN, ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tools import ensure_tools, run_tool

Kubectl = Callable[..., Awaitable[subprocess.CompletedProcess[str]]]


@pytest.fixture(scope="module")
async def served_hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url) as hub:
        yield hub


@pytest.fixture(scope="session")
async def kubectl_binary() -> Path:
    return (await asyncio.to_thread(ensure_tools)).kubectl


@pytest.fixture
def kubectl_args(kubectl_binary: Path, served_hub: ServedHub, tmp_path: Path) -> list[str]:
    """kubectl and the flags that point it at the hub with the admin's token."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "hub", "cluster": {"server": served_hub.url, "certificate-authority": str(served_hub.ca_file)}}
        ],
        "users": [{"name": ADMIN, "user": {"token": served_hub.tokens[ADMIN]}}],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": ADMIN}}],
        "current-context": "hub",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return [str(kubectl_binary), "--kubeconfig", str(path), "--cache-dir", str(tmp_path / "cache")]


@pytest.fixture
def kubectl(kubectl_args: list[str]) -> Kubectl:
    async def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return await run_tool(*kubectl_args, *args, input=input)

    return run

"""The real kubectl (built by `make tools`) against an in-process hub, with a generated kubeconfig.

Each test gets its own discovery cache directory, so what kubectl learned in one test (say, which
shadow resources exist) cannot make another pass or fail.
"""

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
EDITOR = "kim-editor"
EDITOR_NAMESPACE = "team-k"
POLICY = {"bindings": [{"role": "edit", "users": [EDITOR], "namespaces": [EDITOR_NAMESPACE]}]}


@pytest.fixture(scope="module")
async def served_hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url, users={EDITOR: []}, policy=POLICY) as hub:
        yield hub


@pytest.fixture(scope="session")
async def kubectl_binary() -> Path:
    return (await asyncio.to_thread(ensure_tools)).kubectl


def kubeconfig(hub: ServedHub, user: str, path: Path) -> Path:
    """A kubeconfig for `user`'s token, trusting the hub's generated CA, as an admin would hand out."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hub", "cluster": {"server": hub.url, "certificate-authority": str(hub.ca_file)}}],
        "users": [{"name": user, "user": {"token": hub.tokens[user]}}],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": user}}],
        "current-context": "hub",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def kubectl_as(binary: Path, hub: ServedHub, user: str, workdir: Path) -> Kubectl:
    config = kubeconfig(hub, user, workdir / f"{user}.kubeconfig")
    cache = workdir / f"{user}-cache"

    async def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return await run_tool(binary, "--kubeconfig", config, "--cache-dir", cache, *args, input=input)

    return run


@pytest.fixture
def kubectl(kubectl_binary: Path, served_hub: ServedHub, tmp_path: Path) -> Kubectl:
    """`kubectl ARGS...` as the hub's admin (system:masters)."""
    return kubectl_as(kubectl_binary, served_hub, ADMIN, tmp_path)


@pytest.fixture
def kubectl_editor(kubectl_binary: Path, served_hub: ServedHub, tmp_path: Path) -> Kubectl:
    """`kubectl ARGS...` as a user who may only edit objects in EDITOR_NAMESPACE."""
    return kubectl_as(kubectl_binary, served_hub, EDITOR, tmp_path)

"""A leaf nats-server run beside the agent rather than by it (`--leaf-url`): on Kubernetes, a sidecar.

The process is the sidecar's, but its remote (the hub's leaf URL and CA, and the cluster's user
and password, which change when registration succeeds) is still the agent's to give, since only
the agent knows the credentials. So the agent writes the `leafnodes` block to
`<state-dir>/sidecar-leaf/remote.conf`, which the sidecar's config includes, and asks the server
to reload it: SIGHUP to the pid in `leaf.pid` there (what `nats-server --signal reload` does;
nats-server reloads leaf remotes). The sidecar starts once `remote.conf` exists, and the pod
shares its process namespace so the agent may signal it (deploy/k8s/child).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import structlog
from clusternet_nats.agent.leaf import LeafRemote, remote_config

DIRECTORY = "sidecar-leaf"
REMOTE_FILE = "remote.conf"
PID_FILE = "leaf.pid"

log = structlog.get_logger(__name__)


class SidecarLeaf:
    def __init__(self, url: str, directory: Path) -> None:
        self.url = url
        self.directory = directory

    async def start(self, remote: LeafRemote, timeout: float = 120.0) -> None:
        """Hands the sidecar this remote, then has it reloaded once the sidecar runs (waiting for
        it: the agent's first remote is what the sidecar waits for before it starts)."""
        await asyncio.to_thread(self._write, remote_config(remote))
        pid = await self._pid(timeout)
        with contextlib.suppress(ProcessLookupError):  # gone: restarted, it reads the new remote
            os.kill(pid, signal.SIGHUP)
        log.info("leaf.sidecar_reloaded", pid=pid, user=remote.user)

    def _write(self, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / REMOTE_FILE
        fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds a password
        with os.fdopen(fd, "w") as out:
            out.write(text)
        path.with_suffix(".tmp").replace(path)

    async def _pid(self, timeout: float) -> int:
        path = self.directory / PID_FILE
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            with contextlib.suppress(OSError, ValueError):
                return int(path.read_text().strip())
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"no leaf sidecar wrote {path} within {timeout}s")
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        """Nothing: the sidecar lives and dies with the pod, not with the agent."""

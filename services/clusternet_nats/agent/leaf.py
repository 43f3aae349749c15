"""The child's end of the tunnel: a leaf nats-server dialling out to the hub's leaf port.

The agent connects only to this local server; the leaf carries what the hub's permissions for
the cluster allow across one outbound TLS link, so a child behind NAT needs no inbound port.
Each leaf has a unique server_name (DESIGN §7) and no JetStream of its own, so JetStream API
calls travel to the hub's. The agent supervises it: a leaf that exits is started again, and
new credentials (after registration) restart it with the new remote.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import structlog
from clusternet_nats.store.cancelling import cancel_and_wait
from clusternet_nats.testing.natsserver import nats_server_binary

log = structlog.get_logger(__name__)
_RESTART_DELAY = 1.0


@dataclass(frozen=True)
class LeafRemote:
    hub_leaf_url: str
    """`tls://host:port` of the hub's leaf-node listener; comma-separated, every server's of a
    NATS cluster: the leaf dials one, and another when that one is gone."""
    user: str
    password: str
    ca_file: Path | None = None


def remote_config(remote: LeafRemote) -> str:
    """The `leafnodes` block dialling the hub as the cluster (our leaf's, or a sidecar's include):
    one remote with every URL given, which nats-server tries in turn (reconnect: 1 s)."""
    credentials = f"{quote(remote.user, safe='')}:{quote(remote.password, safe='')}"
    urls = []
    for given in remote.hub_leaf_url.split(","):
        hub = urlsplit(given.strip())
        urls.append(f'"{hub.scheme}://{credentials}@{hub.netloc}"')
    tls = f'tls {{ ca_file: "{remote.ca_file}" }}' if remote.ca_file else ""
    return f"leafnodes {{ reconnect: 1\n  remotes [ {{ urls: [ {', '.join(urls)} ]\n {tls} }} ]\n}}\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LeafNode:
    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.server_name = f"leaf-{name}-{secrets.token_hex(3)}"
        self.port = _free_port()
        self._remote: LeafRemote | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._supervisor: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def _config(self, remote: LeafRemote) -> str:
        return f"server_name: {self.server_name}\nlisten: 127.0.0.1:{self.port}\n{remote_config(remote)}"

    async def start(self, remote: LeafRemote) -> None:
        """Starts (or restarts, with a new remote) the leaf and returns once it listens."""
        if remote == self._remote and self._supervised_here():
            return
        self._remote = remote
        await self.stop()
        self._supervisor = asyncio.create_task(self._supervise(), name=f"leaf:{self.server_name}")
        await self._wait_listening()

    async def _supervise(self) -> None:
        while self._remote is not None:
            config = self.directory / "leaf.conf"
            await asyncio.to_thread(self._write, config, self._config(self._remote))
            self._proc = await asyncio.create_subprocess_exec(
                nats_server_binary(),
                "-c",
                str(config),
                "--log",
                str(self.directory / "leaf.log"),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
            code = await self._proc.wait()
            log.warning("leaf.exited", server_name=self.server_name, code=code)
            await asyncio.sleep(_RESTART_DELAY)

    def _write(self, path: Path, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    async def _wait_listening(self, timeout: float = 20.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.close()
                await writer.wait_closed()
                return
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"leaf {self.server_name} not listening on {self.port}") from None
                await asyncio.sleep(0.05)

    def _supervised_here(self) -> bool:
        """Running under a supervisor of this event loop (an agent process registers its first
        cluster in a loop of its own before the service's loop starts, then hands the leaf over)."""
        task = self._supervisor
        return task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop()

    async def stop(self) -> None:
        task, self._supervisor = self._supervisor, None
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await cancel_and_wait([task])
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        if task is None or task.get_loop() is not asyncio.get_running_loop():
            await asyncio.to_thread(_terminate, proc.pid)  # started under a loop that has ended
            return
        proc.terminate()
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


def _terminate(pid: int, grace: float = 10.0) -> None:
    """Stops our child by pid (its asyncio handle may belong to a loop that has ended)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # already reaped (by asyncio's child watcher)
            return
        if done:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)

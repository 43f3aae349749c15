"""The shipped compose configuration run for real: `clusternet-nats-init` makes the secrets into a
directory, deploy/compose/nats.conf runs as it is committed (only its paths and ports made this
test's), and the hub's registration services run with the env file init wrote for the hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from clusternet_nats.hub.registration.service import RegistrationOptions, build_registration
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer, free_port, nats_server_binary
from clusternet_nats.testing.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
COMPOSE_CONF = REPO / "deploy" / "compose" / "nats.conf"


def read_env(path: Path) -> dict[str, str]:
    """An env file init wrote (`KEY='value'` lines), as `set -a; . FILE` would read it."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        values[key] = shlex.split(value)[0]
    return values


async def run_init(out: Path, *args: str) -> str:
    """`python -m clusternet_nats.hub.natsinit OUT ARGS`, as compose's init service runs it."""
    return await natsinit(str(out), *args)


async def natsinit(*args: str) -> str:
    """`python -m clusternet_nats.hub.natsinit ARGS`; its output, once it exited 0."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "clusternet_nats.hub.natsinit", *args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await proc.communicate()
    assert proc.returncode == 0, output.decode()
    return output.decode()


def substituted(text: str, replacements: dict[str, str]) -> str:
    """The committed text with each replacement made; each must be there, so a changed shipped
    file fails here rather than silently testing something else."""
    for old, new in replacements.items():
        assert old in text, f"{old!r} is no longer in {COMPOSE_CONF}"
        text = text.replace(old, new)
    return text


class CommittedConfigServer(NatsServer):
    """A nats-server running `text` (the committed configuration, substituted) from store_dir."""

    def __init__(self, store_dir: Path, text: str, port: int) -> None:
        super().__init__(store_dir=store_dir, port=port)
        self.text = text

    def _write_config(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.text.replace("http: 127.0.0.1:8222", f"http: 127.0.0.1:{self.monitor_port}"))


@dataclass
class Shipped:
    out: Path
    server: CommittedConfigServer
    leaf_port: int

    def env(self, consumer: str) -> dict[str, str]:
        return read_env(self.out / consumer / "env")

    @property
    def anonymous_url(self) -> str:
        return f"nats://127.0.0.1:{self.server.port}"

    @property
    def leaf_url(self) -> str:
        return f"tls://127.0.0.1:{self.leaf_port}"


@contextlib.asynccontextmanager
async def shipped_server(tmp: Path) -> AsyncIterator[Shipped]:
    """init's secrets and the committed compose nats.conf, running; no hub yet."""
    port, leaf_port = free_port(), free_port()
    out = tmp / "out"
    await run_init(out, "--nats-host=127.0.0.1", f"--nats-port={port}", f"--leaf-port={leaf_port}")
    server_dir = tmp / "server"
    server_dir.mkdir()
    (server_dir / "secrets").symlink_to(out / "nats")  # compose mounts the nats volume there
    text = substituted(
        COMPOSE_CONF.read_text(),
        {
            "/etc/nats/secrets/": f"{out / 'nats'}/",
            'store_dir: "/data"': f'store_dir: "{server_dir / "jetstream"}"',
            "listen: 0.0.0.0:4222": f"listen: 127.0.0.1:{port}",
            "listen: 0.0.0.0:7422": f"listen: 127.0.0.1:{leaf_port}",
            "http: 127.0.0.1:8222": "http: 127.0.0.1:8222",  # the monitor port is the server's own
        },
    )
    server = CommittedConfigServer(server_dir, text, port)
    await asyncio.to_thread(server.start)
    try:
        yield Shipped(out, server, leaf_port)
    finally:
        await asyncio.to_thread(server.cleanup)


@contextlib.asynccontextmanager
async def shipped_hub(tmp: Path) -> AsyncIterator[Shipped]:
    """`shipped_server` with the hub's registration services in this event loop, configured from
    the env file init wrote for the hub."""
    async with shipped_server(tmp) as shipped:
        hub = shipped.env("hub")
        built: list[object] = []

        async def build(ctx: ServiceContext) -> None:
            options = RegistrationOptions(
                hub["CNET_HUB_ISSUER_SEED"],
                hub["CNET_HUB_CALLOUT_URL"],
                hub["CNET_HUB_SYSTEM_URL"],
                jetstream_domain=hub["CNET_JETSTREAM_DOMAIN"],
                bootstrap_token_file=Path(hub["CNET_HUB_BOOTSTRAP_TOKEN_FILE"]),
            )
            built.append(await build_registration(ctx, options))

        async with running_service("clusternet-hub", build, hub["CNET_NATS_URL"]):
            await eventually(lambda: bool(built), timeout=20, what="registration services built")
            yield shipped


class Leaf:
    """A child's leaf nats-server dialling the hub's leaf port with `remote_url` (TLS, the CA)."""

    def __init__(self, directory: Path, remote_url: str, ca: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.log = directory / "leaf.log"
        directory.mkdir(parents=True, exist_ok=True)
        self.config = directory / "leaf.conf"
        self.config.write_text(
            f"server_name: leaf-{directory.name}\nlisten: 127.0.0.1:{self.port}\n"
            f'leafnodes {{ reconnect: "1s", remotes [ {{ url: "{remote_url}", tls {{ ca_file: "{ca}" }} }} ] }}\n'
        )
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Leaf:
        self.proc = await asyncio.create_subprocess_exec(
            nats_server_binary(), "-c", str(self.config), "--log", str(self.log), start_new_session=True
        )

        async def listening() -> bool:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                return False
            writer.close()
            await writer.wait_closed()
            return True

        await eventually(listening, timeout=20, what="leaf listening")
        return self

    async def __aexit__(self, *_: object) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()

    def logged(self, text: str) -> bool:
        return self.log.exists() and text in self.log.read_text()

"""The bridge as the program a Deployment runs: ready once it has listed both sides, exit 0 on
SIGTERM."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clusternet_nats.testing.natsserver import NatsServer, free_port
from clusternet_nats.testing.system import ServiceProcess
from clusternet_nats.testing.waiting import eventually

from tests.bridge.conftest import Parent


async def test_bridge_process_gets_ready_and_stops_cleanly(
    parent: Parent, nats_server: NatsServer, tmp_path: Path
) -> None:
    bridge = ServiceProcess(
        name="bridge",
        module="clusternet_nats.bridge",
        args=["--nats-url", nats_server.url, "--kubeconfig", str(parent.plane.kubeconfig)],
        log_path=tmp_path / "bridge.log",
        health_port=free_port(),
    )
    bridge.start()
    try:
        await eventually(lambda: asyncio.to_thread(bridge.ready), timeout=30, what="bridge /readyz")
    finally:
        code = await asyncio.to_thread(bridge.stop)
    assert code == 0, (tmp_path / "bridge.log").read_text()

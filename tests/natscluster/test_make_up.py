"""`make up NATS_CLUSTER=3` (`devsystem up --nats-cluster 3`): the system on a 3-node JetStream
cluster with R3 buckets, which keeps answering `cnet` after one NATS server is killed."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import nats
from clusternet_nats.testing.natsserver import free_port, free_port_run
from clusternet_nats.testing.waiting import eventually


async def cnet(config: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "cnet"), "--config", str(config), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return int(proc.returncode or 0), out.decode()


async def test_up_with_a_nats_cluster_survives_a_killed_server(tmp_path: Path) -> None:
    nats_port = free_port_run(3)  # the cluster's servers listen on it and the two ports after it
    config = tmp_path / "cnet-config"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "clusternet_nats.devsystem", "up", "--nats-cluster", "3", "--clusters", "2",
        "--hub-port", str(free_port()), "--nats-port", str(nats_port), "--workdir", str(tmp_path / "up"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "CNET_CONFIG": str(config)},
    )
    assert proc.stdout is not None
    banner = ""
    try:
        while "Ctrl-C" not in banner:
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            assert line, f"up exited before it was up:\n{banner}"
            banner += line.decode()
        found = re.search(r"NATS cluster of 3 \(R3\): n1 pid (\d+), n2 pid (\d+), n3 pid (\d+)", banner)
        assert found, banner
        nc = await nats.connect(f"nats://127.0.0.1:{nats_port + 1}")
        try:
            info = await nc.jetstream().stream_info("KV_subscriptions")
            assert info.config.num_replicas == 3
        finally:
            await nc.close()
        os.kill(int(found.group(1)), signal.SIGKILL)

        async def answers() -> str | None:
            code, out = await cnet(config, "get", "mcls", "-A")
            return out if code == 0 and out.count("\n") >= 3 else None

        listed = await eventually(answers, 60, what="cnet get mcls after a NATS server was killed")
        assert "sim" in listed
    finally:
        if proc.returncode is None:  # already gone: its output below says why
            proc.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, rest.decode()

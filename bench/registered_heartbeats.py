"""Benchmark: the hub side's cost of heartbeats from registered clusters (registration mode).

A secured hub (real nats-server with auth callout; the hub's registration services, and so its
intake, in this process) and one agent process hosting N simulated clusters that register with
a bootstrap token, then report every `--report-frequency` seconds. Once every cluster has
reported, samples for `--window` seconds the CPU of the hub side (nats-server plus this process,
which runs nothing but the hub's services while sampling) and counts heartbeats stored. Prints,
in the same run, the raw reference: nats-py `publish_async` into a JetStream stream on the same
server, msgs/s.

    .venv/bin/python bench/registered_heartbeats.py --clusters 500 --report-frequency 5
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path

import nats
import psutil
import structlog
from clusternet_nats.hub.registration.testing import Hub, secured_hub
from clusternet_nats.store import JsonBucket
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.system import ServiceProcess

STATUS_STREAM = "KV_managedclusters-status"


async def stored_heartbeats(hub: Hub) -> tuple[int, int]:
    """(clusters that reported, last sequence) of the cluster-status bucket."""
    js = hub.nc.jetstream()
    keys = await JsonBucket(js, "managedclusters-status").keys()
    return len(keys), int((await js.stream_info(STATUS_STREAM)).state.last_seq)


async def publish_async_rate(url: str, count: int = 20_000) -> float:
    """The bus's own rate here and now: nats-py publish_async into a stream, then wait for acks."""
    nc = await nats.connect(url)
    js = nc.jetstream(publish_async_max_pending=4000)
    await js.add_stream(name="BENCH_REFERENCE", subjects=["bench.reference"])
    try:
        started = time.monotonic()
        for _ in range(count):
            await js.publish_async("bench.reference", b"x" * 512)
        await js.publish_async_completed()
        return count / (time.monotonic() - started)
    finally:
        await js.delete_stream("BENCH_REFERENCE")
        await nc.close()


async def main(clusters: int, report_frequency: float, window: float) -> int:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="cnet-bench-") as tmp:
        directory = Path(tmp)
        async with secured_hub(directory) as hub:
            agent = ServiceProcess(
                name="agent",
                module="clusternet_nats.agent",
                args=[
                    *("--nats-url", hub.secure.server.url, "--log-level", "warning"),
                    *("--cluster-name", "bench", "--sim-clusters", str(clusters)),
                    *("--bootstrap-token", await hub.token(), "--state-dir", str(directory / "state")),
                    *("--jetstream-domain", "hub", "--cluster-status-update-frequency", str(report_frequency)),
                ],
                log_path=directory / "agent.log",
                health_port=free_port(),
            )
            started = time.monotonic()
            agent.start()
            try:
                while (await stored_heartbeats(hub))[0] < clusters:
                    if time.monotonic() - started > 600 or not agent.running:
                        print("FAILED: not every cluster reported\n" + agent.log_tail())
                        return 1
                    await asyncio.sleep(0.5)
                print(f"{clusters} clusters registered and reporting {time.monotonic() - started:.1f}s after start")
                server = psutil.Process(hub.secure.server.proc.pid)  # type: ignore[union-attr]
                here = psutil.Process()
                for proc in (server, here):
                    proc.cpu_percent(None)
                _, seq0 = await stored_heartbeats(hub)
                t0 = time.monotonic()
                await asyncio.sleep(window)
                elapsed = time.monotonic() - t0
                server_cpu, hub_cpu = server.cpu_percent(None), here.cpu_percent(None)
                _, seq1 = await stored_heartbeats(hub)
            finally:
                await asyncio.to_thread(agent.stop)
            rate = (seq1 - seq0) / elapsed
            total = server_cpu + hub_cpu
            print(f"heartbeats stored: {rate:.1f}/s (expected {clusters / report_frequency:.1f}/s)")
            print(f"hub-side CPU: {total:.1f}% of one core", end=" ")
            print(f"(nats-server {server_cpu:.1f}%, hub services {hub_cpu:.1f}%)")
            if rate:
                print(f"hub-side CPU per heartbeat: {total / 100 / rate * 1000:.2f} ms")
            reference = await publish_async_rate(hub.secure.url("hub"))
            print(f"reference: nats-py publish_async {reference:.0f} msgs/s on the same server")
            print(f"load average: {' '.join(f'{x:.2f}' for x in psutil.getloadavg())}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--report-frequency", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=30.0)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.clusters, args.report_frequency, args.window)))

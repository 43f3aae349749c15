"""Benchmark: the steady heartbeat load of N simulated clusters on the hub side.

Starts the system with N simulated clusters reporting every `--report-frequency` seconds (far
more often than Clusternet's 3 minutes, to make the load visible), waits until every cluster has
reported, then samples for `--window` seconds the CPU and resident memory of the hub side
(nats-server, hub with its cluster-health controller, scheduler, deployer, predictor) and of the
agent process. Prints heartbeats/s received, hub-side CPU% (100% = one core) and MiB, in total
and per cluster.

    .venv/bin/python bench/heartbeat_load.py --clusters 500 --report-frequency 10
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import nats
import psutil
from clusternet_nats.testing.system import System

STATUS_STREAM = "KV_managedclusters-status"


def stream_last_seq(system: System) -> int:
    async def last_seq() -> int:
        nc = await nats.connect(system.nats_url)
        try:
            return int((await nc.jetstream().stream_info(STATUS_STREAM)).state.last_seq)
        finally:
            await nc.close()

    return asyncio.run(last_seq())


def ready_clusters(system: System) -> int:
    items = system.hub_get("/apis/clusters.clusternet.io/v1beta1/managedclusters")["items"]
    return sum(
        1
        for m in items
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (m.get("status") or {}).get("conditions") or []
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--report-frequency", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="cnet-bench-"))
    agent_args = ("--cluster-status-update-frequency", str(args.report_frequency))
    system = System(
        workdir, sim_clusters=args.clusters, labels_cycle="env=bench", log_level=args.log_level, agent_args=agent_args
    )
    t0 = time.monotonic()
    system.start(timeout=600)
    try:
        while ready_clusters(system) < args.clusters:
            if time.monotonic() - t0 > 600:
                print("TIMEOUT waiting for every cluster to be Ready")
                return 1
            time.sleep(0.5)
        print(f"{args.clusters} clusters Ready {time.monotonic() - t0:.1f}s after start")
        procs = {name: psutil.Process(pid) for name, pid in system.hub_side_pids().items()}
        agent = psutil.Process(system.services["agent"].proc.pid)  # type: ignore[union-attr]
        for proc in [*procs.values(), agent]:
            proc.cpu_percent(None)
        seq0, started = stream_last_seq(system), time.monotonic()
        time.sleep(args.window)
        elapsed = time.monotonic() - started
        beats = (stream_last_seq(system) - seq0) / elapsed
        cpu = {name: proc.cpu_percent(None) for name, proc in procs.items()}
        rss = {name: proc.memory_info().rss / 2**20 for name, proc in procs.items()}
        print(f"heartbeats: {beats:.1f}/s (expected {args.clusters / args.report_frequency:.1f}/s)")
        for name in sorted(procs):
            print(f"  {name:12s} cpu {cpu[name]:6.1f}%  rss {rss[name]:7.1f} MiB")
        total_cpu, total_rss = sum(cpu.values()), sum(rss.values())
        print(f"hub side: cpu {total_cpu:.1f}% ({total_cpu / args.clusters * 1000:.2f}% per 1,000 clusters)")
        print(f"hub side: rss {total_rss:.1f} MiB ({total_rss / args.clusters * 1024:.0f} KiB per cluster)")
        print(f"agent process: cpu {agent.cpu_percent(None):.1f}%  rss {agent.memory_info().rss / 2**20:.1f} MiB")
    finally:
        system.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

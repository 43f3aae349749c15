"""Benchmark: the steady heartbeat load of N simulated clusters on the hub side.

Starts the system (development mode: no registration) with N simulated clusters in one agent
process reporting every `--report-frequency` seconds (far more often than Clusternet's 3 minutes,
to make the load visible), waits until every cluster is Ready, then for `--window` seconds samples
the CPU of the hub side (nats-server, hub with its cluster-health controller, scheduler, deployer,
predictor) and of the agent process, counts the heartbeats on the wire (core NATS,
`clusternet.heartbeat.*.*`) and the status writes (the `managedclusters-status` stream's
sequence: a steady fleet writes none). Prints the hub-side CPU% (100% = one core) per process,
the CPU per heartbeat, and what that implies for 10,000 clusters at Clusternet's default 180 s:
an upper bound, since every CPU second of the window, idle work included, is taken as the
heartbeats'; a run with a period longer than the window (e.g. 600 s) measures that idle
floor, the difference being what the heartbeats cost. Beside them, in the same run, the raw
reference (nats-py `publish_async` into a JetStream stream on the same server) and the load
average. `--json PATH` appends the figures in the scale report's format (testing/benchresult.py).

    .venv/bin/python bench/heartbeat_load.py --clusters 1000 --report-frequency 5 --window 30
    .venv/bin/python bench/heartbeat_load.py --clusters 1000 --report-frequency 600 --window 30  # idle floor
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
from clusternet_nats.agent.heartbeat import DEFAULT_REPORT_FREQUENCY
from clusternet_nats.api.registry import by_kind
from clusternet_nats.api.subjects import HEARTBEAT
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.testing import benchresult
from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.system import System
from nats.aio.msg import Msg

STATUS_STREAM = f"KV_{by_kind('ManagedCluster').status_bucket}"
TARGET_CLUSTERS = 10_000


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


async def count_window(url: str, window: float) -> tuple[int, int, float]:
    """(heartbeats seen, status writes, seconds) over `window` seconds."""
    nc = await nats.connect(url)
    beats = 0

    async def heard(_msg: Msg) -> None:
        nonlocal beats
        beats += 1

    try:
        js = nc.jetstream()
        await nc.subscribe(HEARTBEAT.filter(), cb=heard)
        await barrier(nc)
        seq0, started = (await js.stream_info(STATUS_STREAM)).state.last_seq, time.monotonic()
        await asyncio.sleep(window)  # the measurement window
        seq1, elapsed = (await js.stream_info(STATUS_STREAM)).state.last_seq, time.monotonic() - started
        return beats, seq1 - seq0, elapsed
    finally:
        await nc.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--report-frequency", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--json", help="append the figures to this JSON Lines file (testing/benchresult.py)")
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
        time.sleep(min(args.report_frequency, 10.0))  # the first reports' writes settle: then the steady state
        procs = {name: psutil.Process(pid) for name, pid in system.hub_side_pids().items()}
        agent = psutil.Process(system.services["agent"].proc.pid)  # type: ignore[union-attr]
        for proc in [*procs.values(), agent]:
            proc.cpu_percent(None)
        beats, writes, elapsed = asyncio.run(count_window(system.nats_url, args.window))
        cpu = {name: round(proc.cpu_percent(None), 1) for name, proc in procs.items()}
        agent_cpu = agent.cpu_percent(None)
        rss = {name: round(proc.memory_info().rss / 2**20, 1) for name, proc in procs.items()}
        rate = beats / elapsed
        total = sum(cpu.values())
        print(f"heartbeats: {rate:.1f}/s on the wire (expected {args.clusters / args.report_frequency:.1f}/s)")
        print(f"status writes: {writes / elapsed:.2f}/s ({writes} in {elapsed:.0f} s)")
        for name in sorted(procs):
            print(f"  {name:12s} cpu {cpu[name]:6.1f}%  rss {rss[name]:7.1f} MiB")
        print(f"hub side: cpu {total:.1f}% of one core")
        per_beat = {n: round(c / 100 / rate * 1000, 4) for n, c in cpu.items()} if rate else {}
        target_rate = TARGET_CLUSTERS / DEFAULT_REPORT_FREQUENCY
        at_target = {n: round(ms / 1000 * target_rate * 100, 2) for n, ms in per_beat.items()}
        if rate:
            print(f"  CPU per heartbeat: {total / 100 / rate * 1000:.4f} ms ({per_beat})")
            print(
                f"  implied for {TARGET_CLUSTERS:,} clusters at {DEFAULT_REPORT_FREQUENCY:.0f} s"
                f" ({target_rate:.1f} heartbeats/s): {sum(at_target.values()):.2f}% of one core ({at_target})"
            )
        print(f"agent process: cpu {agent_cpu:.1f}%  rss {agent.memory_info().rss / 2**20:.1f} MiB")
        reference = asyncio.run(publish_async_rate(system.nats_url))
        print(f"reference: nats-py publish_async {reference:.0f} msgs/s on the same server")
        print(f"load average: {load_average()}")
        if args.json:
            benchresult.write(
                args.json,
                bench="heartbeat_load",
                clusters=args.clusters,
                figures={
                    "heartbeats_per_s": round(rate, 2),
                    "status_writes_per_s": round(writes / elapsed, 3),
                    "hub_cpu_percent": cpu,
                    "cpu_ms_per_heartbeat": per_beat,
                    "hub_cpu_percent_10000_at_180s": at_target,
                    "report_frequency_s": args.report_frequency,
                    "rss_mib": rss,
                },
                reference=reference,
                notes={
                    "hub_cpu_percent_10000_at_180s": "cpu_ms_per_heartbeat x 10,000/180 heartbeats/s: an upper"
                    " bound, every CPU second of the window (idle work included) taken as the heartbeats'",
                    "heartbeats_per_s": "core NATS heartbeats on clusternet.heartbeat.*.*, counted on the wire",
                },
            )
    finally:
        system.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

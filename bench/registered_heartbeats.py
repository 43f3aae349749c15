"""Benchmark: what heartbeats of registered clusters cost the whole hub side (registration mode).

A secured hub nats-server (auth callout, TLS leaf port: testing/securehub.py), the hub in
registration mode, the scheduler, deployer and predictor, each its own process as deployed, and
one agent process hosting N simulated clusters that register with a bootstrap token and report
every `--report-frequency` seconds. Once every cluster has reported, samples for `--window`
seconds the CPU of the hub side (nats-server and the four services) and counts heartbeats
stored. Prints, in the same run, the raw reference: nats-py `publish_async` into a JetStream
stream on the same server, msgs/s.

    .venv/bin/python bench/registered_heartbeats.py --clusters 500 --report-frequency 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import nats
import psutil
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.records import ensure_registration_buckets, new_token, token_store
from clusternet_nats.store import JsonBucket, ensure_buckets
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.securehub import SecureHub
from clusternet_nats.testing.system import ServiceProcess, wait_ready

STATUS_STREAM = "KV_managedclusters-status"
HUB_SIDE = ("hub", "scheduler", "deployer", "predictor")


def service(name: str, directory: Path, args: list[str]) -> ServiceProcess:
    return ServiceProcess(
        name=name,
        module=f"clusternet_nats.{name}",
        args=[*args, "--log-level", "warning"],
        log_path=directory / f"{name}.log",
        health_port=free_port(),
    )


async def stored_heartbeats(js: nats.js.JetStreamContext) -> tuple[int, int]:
    """(clusters that reported, last sequence) of the cluster-status bucket."""
    keys = await JsonBucket(js, "managedclusters-status").keys()
    return len(keys), int((await js.stream_info(STATUS_STREAM)).state.last_seq)


async def main(clusters: int, report_frequency: float, window: float) -> int:
    with tempfile.TemporaryDirectory(prefix="cnet-bench-") as tmp:
        directory = Path(tmp)
        seed = jwt.new_account_seed()
        secure = SecureHub(directory, seed, jwt.public_key(seed))
        secure.server.start()
        nc = await nats.connect(secure.url("hub"))
        js = nc.jetstream()
        processes: list[ServiceProcess] = []
        try:
            await ensure_buckets(js)
            await ensure_registration_buckets(js)
            token, record = new_token(timedelta(hours=1))
            await token_store(js).put(record.token_id, record, 0)
            common = ["--nats-url", secure.url("hub"), "--jetstream-domain", "hub"]
            os.environ["XDG_STATE_HOME"] = str(directory)  # where the hub keeps the CA it generates
            hub_args = ["--listen", f"127.0.0.1:{free_port()}"]
            hub_args += [
                "--issuer-seed",
                seed,
                "--callout-url",
                secure.url("callout"),
                "--system-url",
                secure.url("sys"),
            ]
            processes = [service("hub", directory, [*common, *hub_args])]
            processes += [service(name, directory, common) for name in HUB_SIDE[1:]]
            for proc in processes:
                proc.start()
            await asyncio.to_thread(wait_ready, processes, 120)
            agent = service(
                "agent",
                directory,
                [
                    *common,
                    *("--cluster-name", "bench", "--sim-clusters", str(clusters)),
                    *("--bootstrap-token", token, "--state-dir", str(directory / "state")),
                    *("--cluster-status-update-frequency", str(report_frequency)),
                ],
            )
            processes.append(agent)
            started = time.monotonic()
            agent.start()
            while (await stored_heartbeats(js))[0] < clusters:
                if time.monotonic() - started > 600 or not agent.running:
                    print("FAILED: not every cluster reported\n" + agent.log_tail())
                    return 1
                await asyncio.sleep(0.5)
            print(f"{clusters} clusters registered and reporting {time.monotonic() - started:.1f}s after start")
            hub_side = {"nats-server": psutil.Process(secure.server.proc.pid)}  # type: ignore[union-attr]
            hub_side |= {p.name: psutil.Process(p.proc.pid) for p in processes if p.name in HUB_SIDE and p.proc}
            for proc in hub_side.values():
                proc.cpu_percent(None)
            _, seq0 = await stored_heartbeats(js)
            t0 = time.monotonic()
            await asyncio.sleep(window)
            elapsed = time.monotonic() - t0
            cpu = {name: proc.cpu_percent(None) for name, proc in hub_side.items()}
            _, seq1 = await stored_heartbeats(js)
            rate = (seq1 - seq0) / elapsed
            total = sum(cpu.values())
            print(f"heartbeats stored: {rate:.1f}/s (expected {clusters / report_frequency:.1f}/s)")
            print(
                f"hub-side CPU: {total:.1f}% of one core (" + ", ".join(f"{n} {c:.1f}%" for n, c in cpu.items()) + ")"
            )
            if rate:
                print(f"hub-side CPU per heartbeat: {total / 100 / rate * 1000:.2f} ms")
            reference = await publish_async_rate(secure.url("hub"))
            print(f"reference: nats-py publish_async {reference:.0f} msgs/s on the same server")
            print(f"load average: {load_average()}")
        finally:
            for proc in reversed(processes):
                await asyncio.to_thread(proc.stop)
            await nc.close()
            secure.server.cleanup()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--report-frequency", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=30.0)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.clusters, args.report_frequency, args.window)))

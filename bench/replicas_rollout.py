"""Benchmark: the Replication rollout of bench/rollout.py to N simulated clusters, with
one and with three replicas of each hub-side service (hub, scheduler, deployer, predictor), on
one NATS server and on a 3-server JetStream cluster (R3), printed side by side in one run.

    .venv/bin/python bench/replicas_rollout.py --clusters 1000 --rounds 2

Each of the four systems is started afresh (the same manifests, the same agent process hosting
every simulated cluster); beside each figure, measured in the same run on the same NATS: nats-py
`publish_async` into a stream with the buckets' replicas (testing/reference.py), and the load
average, since the machine is shared; `--rounds` runs the four in turn again, so a change of load
shows as a change between rounds rather than between columns. Replicas share keys by partition (runtime/partitions.py):
a single Subscription is one key, reconciled by one scheduler and one deployer replica whatever
the count, so this measures what replicas cost (leases, more informers on the bus), not a
speed-up; that comes with many Subscriptions, whose keys spread over the replicas.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.system import System
from rollout import MANIFESTS, rollout


@dataclass
class Run:
    nats: int
    replicas: int
    start: float
    rollout: float | None
    reference: float
    load: str


def one_run(workdir: Path, clusters: int, nats: int, replicas: int, log_level: str, timeout: float) -> Run:
    system = System(
        workdir / f"nats{nats}-replicas{replicas}",
        sim_clusters=clusters,
        labels_cycle="env=bench",
        log_level=log_level,
        nats_cluster=nats,
        replicas=replicas,
    )
    try:
        began = time.monotonic()
        system.start(timeout=300)
        start = time.monotonic() - began
        manifests = system.workdir / "bench.yaml"
        manifests.write_text(MANIFESTS)
        outcome = rollout(system, manifests, clusters, timeout)
        elapsed = outcome[0] if outcome else None
        load = load_average()
        reference = asyncio.run(publish_async_rate(system.nats_url, int(system.stream_replicas)))
    finally:
        system.stop()
    return Run(nats, replicas, start, elapsed, reference, load)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--rounds", type=int, default=1, help="times to run the four systems in turn")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="cnet-bench-replicas-"))
    print(f"rollout to {args.clusters} simulated clusters (apply -> every Description Success)")
    print(
        f"{'NATS':<18} {'replicas/service':>16} {'system start':>13} {'rollout':>9} "
        f"{'publish_async (raw)':>20}  load (1/5/15 min)",
        flush=True,
    )
    ok = True
    for r in range(1, args.rounds + 1):
        for nats, replicas in ((1, 1), (1, 3), (3, 1), (3, 3)):
            run = one_run(workdir / f"round{r}", args.clusters, nats, replicas, args.log_level, args.timeout)
            ok = ok and run.rollout is not None
            where = "1 server" if run.nats == 1 else f"{run.nats} servers, R3"
            took = f"{run.rollout:.2f}s" if run.rollout is not None else "TIMEOUT"
            print(
                f"{where:<18} {run.replicas:>16} {run.start:>12.1f}s {took:>9} "
                f"{run.reference:>14,.0f} msg/s  {run.load}",
                flush=True,
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: one Subscription (Replication, or Dividing its Deployment's replicas over every
cluster by static weight) to N simulated clusters, then a Globalization that changes every
cluster's Description.

Once the fleet is up and the hub has finished setting its clusters up (its services nearly idle:
`settle`), prints the time from `cnet apply` to every Description being Success (and the Subscription
showing completedReleases == N), the rate Bases and Descriptions were written at (from the
server timestamps of their messages on the KV streams), how many messages each stream stored (from
its last sequence, so superseded writes count: a Description status's Pending, then its Success;
Events, heartbeats and node inventories too), then and once more after the memory reading, the
resident memory of the hub side (nats-server, hub, scheduler, deployer, predictor) and of the agent
processes hosting the simulated clusters, read once the services have returned the rollout's freed
heap (runtime/heap.py, every 10 s); then the time from `cnet apply` of a Globalization (ApplyNow,
every cluster) to every Description rewritten, and their rate.

    .venv/bin/python bench/rollout.py --clusters 1000
    .venv/bin/python bench/rollout.py --clusters 1000 --strategy Dividing --json results/rollout.jsonl
    .venv/bin/python bench/rollout.py --clusters 1000 --nats-cluster 3

`--nats-cluster 3` runs NATS as a 3-server JetStream cluster with R3 buckets. Beside the figures
it prints a raw reference measured in the same run on the same NATS: nats-py `publish_async`
into a stream with the buckets' replicas (testing/reference.py, as every bench), and the load
average, since the machine is shared. `--json PATH` appends the figures (testing/benchresult.py):
one record for the rollout, one for the Globalization update.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import subprocess
import sys
import tempfile
import time
import urllib.error
from http import HTTPStatus
from pathlib import Path
from typing import Any

import nats
import psutil
from clusternet_nats.api.apps import Base, Description, Subscription
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.api.subjects import BINDINGS_BUCKET
from clusternet_nats.runtime.heap import TRIM_INTERVAL
from clusternet_nats.store import object_key
from clusternet_nats.store.keys import kv_stream, kv_subject_prefix
from clusternet_nats.testing import benchresult
from clusternet_nats.testing.natsserver import NatsCluster
from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.system import System
from cpu import cpu_seconds  # bench/cpu.py, beside this
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

REPO = Path(__file__).resolve().parents[1]
SUBSCRIPTION = "/apis/apps.clusternet.io/v1alpha1/namespaces/default/subscriptions/bench-replication"
SUBSCRIPTION_KEY = object_key("default", "bench-replication")
DESCRIPTIONS = "/apis/apps.clusternet.io/v1alpha1/descriptions"
STRATEGIES = ("Replication", "Dividing")
REPLICAS_PER_CLUSTER = 2
"""Dividing: the Deployment asks for this many replicas per cluster, divided by equal weights."""

FEEDS = """
apiVersion: v1
kind: Namespace
metadata: {name: bench}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: bench}
spec:
  replicas: %(replicas)d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.25
          resources: {requests: {cpu: 100m, memory: 64Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: bench}
spec:
  ports: [{port: 80}]
  selector: {app: web}
---
apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: bench-replication, namespace: default}
spec:
  subscribers:
    - clusterAffinity:
        matchExpressions:
          - {key: clusters.clusternet.io/cluster-id, operator: Exists}
%(weight)s%(strategy)s  feeds:
    - {apiVersion: v1, kind: Namespace, name: bench}
    - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: bench}
    - {apiVersion: v1, kind: Service, name: web, namespace: bench}
"""

MANIFESTS = FEEDS % {"replicas": 2, "weight": "", "strategy": ""}
"""The Replication rollout (other benches reuse it)."""

GLOBALIZATION = """
apiVersion: apps.clusternet.io/v1alpha1
kind: Globalization
metadata: {name: bench-everywhere}
spec:
  feed: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: bench}
  overridePolicy: ApplyNow
  overrides:
    - {name: rollout-bench, type: MergePatch, value: '{"metadata":{"labels":{"bench":"globalized"}}}'}
"""


def manifests(strategy: str, clusters: int) -> str:
    if strategy == "Replication":
        return MANIFESTS
    return FEEDS % {
        "replicas": REPLICAS_PER_CLUSTER * clusters,
        "weight": "      weight: 1\n",
        "strategy": "  schedulingStrategy: Dividing\n  dividingScheduling: {type: Static}\n",
    }


def every_pid(system: System) -> dict[str, int]:
    """nats-server, the hub-side services and the agent processes."""
    agents = {name: s.proc.pid for name, s in system.services.items() if name in system.agents() and s.proc}
    return system.hub_side_pids() | agents


SETTLED_CPU = 0.05
"""Hub-side services are settled once together they use under this share of one core."""


def settle(system: System, timeout: float = 180.0, sample: float = 2.0) -> str:
    """Waits until the hub-side services have finished setting the fleet up (the hub initialises
    each newly Ready cluster after `System.start` returns), so the rollout measured does not share
    the CPU with that; says how long it took and what they used last."""
    pids = {name: pid for name, pid in system.hub_side_pids().items() if name != "nats-server"}
    started = time.monotonic()
    while True:
        before = cpu_seconds(pids)
        time.sleep(sample)
        used = sum(cpu_seconds(pids).values()) - sum(before.values())
        waited = time.monotonic() - started
        if used / sample < SETTLED_CPU:
            return f"settled {waited:.1f}s after start (hub-side services {100 * used / sample:.0f}% of a core)"
        if waited > timeout:
            return f"NOT settled {waited:.0f}s after start (hub-side services {100 * used / sample:.0f}% of a core)"


def rss_mib(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 2**20


def cnet_apply(system: System, manifest_file: Path) -> None:
    cnet = Path(sys.executable).parent / "cnet"
    subprocess.run([str(cnet), "--config", str(system.cnet_config), "apply", "-f", str(manifest_file)], check=True)


def hub_get(system: System, path: str) -> Any:
    """The hub's answer, or None while it sheds load (503) or is slow: the poll asks again."""
    try:
        return system.hub_get(path)
    except urllib.error.HTTPError as err:
        if err.code != HTTPStatus.SERVICE_UNAVAILABLE:
            raise
    except TimeoutError:
        pass
    return None


def rollout(
    system: System, manifest_file: Path, clusters: int | None, timeout: float
) -> tuple[float, int, float] | None:
    """`cnet apply` of the manifests, then (seconds until the Subscription's status counted
    every bound cluster's release completed, clusters bound, seconds `cnet apply` itself took);
    None (and why, printed) after `timeout`. `clusters`: how many must be bound (Replication
    binds every cluster); None: as many as the scheduler binds (Dividing, like Clusternet's,
    scores an adaptive share of a fleet over 100 clusters: 42% of 1,000, 5% of 10,000).

    The status is watched in its KV bucket, as the hub sees it change: polling the hub instead
    would have it decode and send the whole status (a line per cluster and feed, 3.5 MB at
    10,000 clusters) ten times a second, on the cores the system under test runs on. Once the
    clock has stopped, the hub's own answers confirm it: the Subscription, and every
    Description Success."""
    started = time.monotonic()
    cnet_apply(system, manifest_file)
    applied = time.monotonic() - started
    outcome = asyncio.run(completed(system.nats_url, clusters, started + timeout))
    if outcome is None:
        print(f"TIMEOUT after {timeout}s: {_progress(system)}")
        return None
    seen, bound = outcome
    while True:
        status = (system.hub_get(SUBSCRIPTION).get("status")) or {}
        descs = system.hub_get(DESCRIPTIONS)["items"]
        ok = sum(1 for d in descs if (d.get("status") or {}).get("phase") == "Success")
        if status.get("completedReleases", 0) >= bound and ok >= bound:
            return seen - started, bound, applied
        if time.monotonic() - started > timeout:
            print(f"TIMEOUT after {timeout}s: the hub shows {_progress(system)}, {ok} Descriptions Success")
            return None
        time.sleep(0.5)


def _progress(system: System) -> str:
    status = (system.hub_get(SUBSCRIPTION).get("status")) or {}
    return f"completedReleases {status.get('completedReleases', 0)}/{status.get('desiredReleases', 0)}"


async def completed(url: str, clusters: int | None, deadline: float) -> tuple[float, int] | None:
    """(monotonic time, clusters bound) once the Subscription's status counts every cluster of
    its binding completed; None at `deadline`.

    Watched, and also read whenever the watch has been quiet for 5 s: a watch that missed the
    last write (its consumer reset under load) would otherwise wait out the deadline on a
    status that was already complete."""
    nc = await nats.connect(url.split(","))
    try:
        js = nc.jetstream()
        statuses = await js.key_value(bucket(Subscription, status=True))
        bindings = await js.key_value(BINDINGS_BUCKET)
        updates = await statuses.watch(SUBSCRIPTION_KEY)
        while (left := deadline - time.monotonic()) > 0:
            try:
                entry = await updates.updates(timeout=min(left, 5.0))  # type: ignore[no-untyped-call]
            except nats.errors.TimeoutError:
                try:
                    entry = await statuses.get(SUBSCRIPTION_KEY)
                except nats.js.errors.KeyNotFoundError:
                    continue
            if entry is None or not entry.value:
                continue
            done = json.loads(entry.value).get("completedReleases", 0)
            try:
                binding = json.loads((await bindings.get(SUBSCRIPTION_KEY)).value or b"{}")
            except nats.js.errors.KeyNotFoundError:
                continue
            bound = len(binding.get("bindingClusters") or [])
            if bound and done >= bound and bound >= (clusters or 0):
                return time.monotonic(), bound
        return None
    finally:
        await nc.close()


def bucket(kind: type[Base | Description | Subscription], status: bool = False) -> str:
    """The KV bucket of `kind`'s specs, or of its statuses."""
    info = KindInfo.of(kind)
    return (info.status_bucket or info.bucket) if status else info.bucket


async def last_sequence(url: str, name: str) -> int:
    nc = await nats.connect(url.split(","))
    try:
        return int((await nc.jetstream().stream_info(kv_stream(name))).state.last_seq)
    finally:
        await nc.close()


async def last_sequences(url: str) -> dict[str, int]:
    """Every stream's last sequence, by stream name."""
    nc = await nats.connect(url.split(","))
    try:
        return {info.config.name or "": int(info.state.last_seq) for info in await nc.jetstream().streams_info()}
    finally:
        await nc.close()


def stored_since(before: dict[str, int], now: dict[str, int]) -> str:
    """How many messages each stream stored between two `last_sequences`, those that stored any."""
    stored = {name: seq - before.get(name, 0) for name, seq in now.items()}
    return ", ".join(f"{name} {count}" for name, count in sorted(stored.items()) if count) or "none"


async def written(url: str, name: str, after: int) -> list[datetime.datetime]:
    """Server timestamps of the writes to bucket `name` stored after stream sequence `after`, in order."""
    nc = await nats.connect(url.split(","))
    js = nc.jetstream()
    stream = kv_stream(name)
    config = ConsumerConfig(
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after + 1,
        headers_only=True,
        inactive_threshold=10.0,
        mem_storage=True,
    )
    stamps: list[datetime.datetime] = []
    try:
        if (await js.stream_info(stream)).state.last_seq <= after:
            return stamps
        subjects = kv_subject_prefix(name) + ">"
        sub = await js.pull_subscribe(subjects, stream=stream, config=config)
        pending = (await sub.consumer_info()).num_pending or 0
        while pending > 0:
            for msg in await sub.fetch(min(pending, 1024), timeout=10.0):
                stamps.append(msg.metadata.timestamp)
                pending = msg.metadata.num_pending or 0
        await sub.unsubscribe()
    finally:
        await nc.close()
    return stamps


def rate(stamps: list[datetime.datetime]) -> tuple[float, float]:
    """(writes per second from the first to the last, seconds that took)."""
    if len(stamps) < 2:
        return 0.0, 0.0
    span = (stamps[-1] - stamps[0]).total_seconds()
    return (len(stamps) / span if span > 0 else 0.0), span


def timeline(
    started: datetime.datetime, applied: float, stamps: dict[str, list[datetime.datetime]], elapsed: float
) -> str:
    """Where the time went: `cnet apply` returning, the first and last write to each bucket
    watched (server timestamps, with how many), and every Description Success."""

    def span(writes: list[datetime.datetime]) -> str:
        if not writes:
            return "none"
        first, last = ((stamp - started).total_seconds() for stamp in (writes[0], writes[-1]))
        return f"{first:.2f}-{last:.2f} ({len(writes)})"

    spans = ", ".join(f"{name} {span(writes)}" for name, writes in stamps.items())
    return f"cnet apply {applied:.2f}, {spans}, all Success {elapsed:.2f}"


def globalization_update(
    system: System, workdir: Path, clusters: int, timeout: float
) -> tuple[float, int, float] | None:
    """`cnet apply` of a Globalization changing every cluster's Deployment, then (seconds until
    `clusters` Descriptions were rewritten, how many were, their rate); None after `timeout`."""
    url = system.nats_url
    before = asyncio.run(last_sequence(url, bucket(Description)))
    path = workdir / "globalization.yaml"
    path.write_text(GLOBALIZATION)
    started_wall = datetime.datetime.now(datetime.UTC)
    started = time.monotonic()
    cnet_apply(system, path)
    while asyncio.run(last_sequence(url, bucket(Description))) - before < clusters:
        if time.monotonic() - started > timeout:
            rewritten = asyncio.run(last_sequence(url, bucket(Description))) - before
            print(f"TIMEOUT after {timeout}s: {rewritten} rewritten")
            return None
        time.sleep(0.1)
    stamps = asyncio.run(written(url, bucket(Description), before))
    per_s, _ = rate(stamps)
    return (stamps[-1] - started_wall).total_seconds(), len(stamps), per_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--strategy", choices=STRATEGIES, default="Replication")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--nats-cluster", type=int, default=1, help="nats-servers in one JetStream cluster (R3)")
    parser.add_argument("--no-globalization", action="store_true", help="skip the Globalization update phase")
    parser.add_argument(
        "--agents", type=int, default=0, help="agent processes the clusters are spread over (default: 1 per 1,000)"
    )
    parser.add_argument("--json", type=Path, help="append the figures here (testing/benchresult.py)")
    args = parser.parse_args()
    args.agents = args.agents or max(1, -(-args.clusters // 1000))

    workdir = Path(tempfile.mkdtemp(prefix="cnet-bench-"))
    per_agent = -(-args.clusters // args.agents)
    system = System(
        workdir,
        sim_clusters=min(per_agent, args.clusters),
        labels_cycle="env=bench",
        log_level=args.log_level,
        nats_cluster=args.nats_cluster,
    )
    for i in range(1, args.agents):
        count = min(per_agent, args.clusters - i * per_agent)
        if count > 0:
            system.add_agent(f"agent-{i + 1}", f"sim{i + 1}", count, "env=bench")
    t0 = time.monotonic()
    system.start(timeout=300)
    startup = time.monotonic() - t0
    manifest_file = workdir / "bench.yaml"
    manifest_file.write_text(manifests(args.strategy, args.clusters))
    try:
        mcls = hub_get(system, "/apis/clusters.clusternet.io/v1beta1/managedclusters")
        print(f"clusters registered: {len(mcls['items']) if mcls else '?'} (system start {startup:.1f}s)")
        print(f"  {settle(system)}")
        started_wall = datetime.datetime.now(datetime.UTC)
        watched = {
            "Bases": bucket(Base),
            "Descriptions": bucket(Description),
            "Description statuses": bucket(Description, status=True),
            "Subscription statuses": bucket(Subscription, status=True),
        }
        streams_before = asyncio.run(last_sequences(system.nats_url))
        before = {name: streams_before.get(kv_stream(b), 0) for name, b in watched.items()}
        pids = every_pid(system)
        cpu_before = cpu_seconds(pids)
        must_bind = args.clusters if args.strategy == "Replication" else None
        outcome = rollout(system, manifest_file, must_bind, args.timeout)
        if outcome is None:
            return 1
        elapsed, bound, applied = outcome
        cpu = {name: spent - cpu_before[name] for name, spent in cpu_seconds(pids).items()}
        load = load_average()
        replicas = system.stream_replicas
        nats_kind = f"{args.nats_cluster}-server cluster, R{replicas}" if args.nats_cluster > 1 else "1 server"
        print(
            f"{args.strategy}: apply -> all {bound} Descriptions Success ({bound} of {args.clusters} clusters bound): "
            f"{elapsed:.2f}s (NATS {nats_kind}, load {load})"
        )
        stamps = {name: asyncio.run(written(system.nats_url, b, before[name])) for name, b in watched.items()}
        writes = asyncio.run(last_sequences(system.nats_url))
        base_rate, base_span = rate(stamps["Bases"])
        description_stamps = stamps["Descriptions"]
        description_rate, description_span = rate(description_stamps)
        print(f"  timeline (s after apply): {timeline(started_wall, applied, stamps, elapsed)}")
        print(f"  stream writes until then (superseded ones too): {stored_since(streams_before, writes)}")
        print("  CPU seconds meanwhile: " + ", ".join(f"{name} {spent:.2f}" for name, spent in sorted(cpu.items())))
        print(f"  Bases written: {base_rate:,.0f}/s over {base_span:.2f}s")
        print(
            f"  Descriptions written: {len(description_stamps)}, {description_rate:,.0f}/s over {description_span:.2f}s"
        )
        reference = asyncio.run(publish_async_rate(system.nats_url, int(system.stream_replicas)))
        print(
            f"  raw reference: nats-py publish_async {reference:,.0f} msgs/s (R{system.stream_replicas}); "
            f"Descriptions/s over it: {description_rate / reference:.3f}"
        )
        # Resident memory once every service has returned the rollout's freed heap (runtime/heap.py
        # trims every TRIM_INTERVAL s): what the fleet costs held, not the peak of its writing.
        time.sleep(TRIM_INTERVAL + 1)
        later = asyncio.run(last_sequences(system.nats_url))
        print(f"  stream writes {TRIM_INTERVAL + 1:.0f}s later: {stored_since(streams_before, later)}")
        hub_side = {name: rss_mib(pid) for name, pid in system.hub_side_pids().items()}
        if isinstance(system.nats, NatsCluster):
            hub_side.pop("nats-server", None)
            hub_side |= {f"nats {s.server_name}": rss_mib(s.proc.pid) for s in system.nats.servers if s.proc}
        for name, mib in sorted(hub_side.items()):
            print(f"  rss {name:12s} {mib:7.1f} MiB")
        print(f"hub-side memory total: {sum(hub_side.values()):.1f} MiB")
        agents = [system.services[name].proc for name in system.agents()]
        hub_side["agents"] = sum(rss_mib(proc.pid) for proc in agents if proc is not None)
        print(f"agent processes ({len(agents)}, {args.clusters} simulated clusters): {hub_side['agents']:.1f} MiB")
        if args.json:
            figures: dict[str, benchresult.Figure] = {
                "strategy": args.strategy,
                "apply_to_success_s": round(elapsed, 3),
                "clusters_bound": bound,
                "descriptions_per_s": round(description_rate, 1),
                "rss_mib": {name: round(mib, 1) for name, mib in hub_side.items()},
            }
            benchresult.write(args.json, bench="rollout", clusters=args.clusters, figures=figures, reference=reference)
        if args.no_globalization:
            return 0
        # Measured before the Globalization, the system idle: once its Descriptions are all
        # rewritten, the agents (yielding the CPU, testing/priority.py) are still applying them.
        reference = asyncio.run(publish_async_rate(system.nats_url, int(system.stream_replicas)))
        update = globalization_update(system, workdir, args.clusters, args.timeout)
        if update is None:
            return 1
        seconds, updated, per_s = update
        print(
            f"Globalization for every cluster: {updated} Descriptions rewritten in {seconds:.2f}s, {per_s:,.0f}/s "
            f"(load {load_average()}); raw reference: nats-py publish_async {reference:,.0f} msgs/s, "
            f"Descriptions/s over it: {per_s / reference:.3f}"
        )
        if args.json:
            benchresult.write(
                args.json,
                bench="rollout",
                clusters=args.clusters,
                figures={
                    "strategy": args.strategy,
                    "globalization_update_s": round(seconds, 3),
                    "descriptions_updated": updated,
                    "descriptions_per_s": round(per_s, 1),
                },
                reference=reference,
            )
    finally:
        system.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

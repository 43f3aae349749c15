"""Benchmark: scheduling throughput over many clusters, in Subscriptions per second.

A nats-server, the scheduler and the predictor as processes, and `--clusters` ManagedClusters
written straight into the store (no agents: the scheduler reads only the records), each with a
node inventory of `--nodes` nodes for the predictor. Clusters carry `group=g<i % groups>`; each
Subscription selects one group (`--groups 1`: every cluster). For each mode in turn (Replication,
static Dividing, dynamic Dividing) `--subs` Subscriptions are written as fast as the store takes
them (a Dividing one after its FeedInventory, as the FeedInventory controller would have written
it), and the rate is the Subscriptions whose binding was written, divided by the time from the
first write to the last binding. Printed beside it, measured in the same run: the raw NATS
request/reply rate (one client, sequential requests to a responder in this process), the
1-minute load average before and after each mode, and the CPU seconds the scheduler and the
predictor spent on it (where the time went).

    .venv/bin/python bench/scheduling.py --clusters 1000 --subs 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import BINDINGS_BUCKET, ObjectStore, StatusStore, ensure_buckets, object_key
from clusternet_nats.store.keys import kv_subject_prefix
from clusternet_nats.testing.natsserver import NatsServer, free_port
from clusternet_nats.testing.system import ServiceProcess, wait_ready
from cpu import cpu_seconds  # bench/cpu.py, beside this
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

NAMESPACE = "bench"
MODES = ("Replication", "Static", "Dynamic")


def cluster_name(i: int) -> tuple[str, str]:
    """(dedicated namespace, name) of the i-th cluster."""
    return f"clusternet-b{i:05d}", f"mc-{i:05d}"


def cluster(i: int, groups: int) -> ManagedCluster:
    namespace, name = cluster_name(i)
    return ManagedCluster.model_validate(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"group": f"g{i % groups}", "weight": str(1 + i % 3)},
            },
            "spec": {"clusterId": f"00000000-0000-0000-0000-{i:012d}", "syncMode": "Pull"},
        }
    )


def inventory(i: int, nodes: int) -> NodeInventory:
    return NodeInventory.model_validate(
        {
            "clusterId": f"00000000-0000-0000-0000-{i:012d}",
            "nodes": [
                {
                    "name": f"n{n}",
                    "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "requested": {"cpu": "0", "memory": "0", "pods": "0"},
                }
                for n in range(nodes)
            ],
        }
    )


def subscription(mode: str, n: int, groups: int) -> Subscription:
    group = {"clusterAffinity": {"matchLabels": {"group": f"g{n % groups}"}}}
    spec: dict[str, Any]
    if mode == "Replication":
        feeds = [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"cm-{n}", "namespace": NAMESPACE}]
        spec = {"subscribers": [group], "feeds": feeds}
    else:
        feeds = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": f"web-{n}", "namespace": NAMESPACE}]
        dividing = {"type": "Static"} if mode == "Static" else {"type": "Dynamic", "dynamicDividing": {}}
        spec = {
            "subscribers": [{**group, "weight": 1}],
            "feeds": feeds,
            "schedulingStrategy": "Dividing",
            "dividingScheduling": dividing,
        }
    return Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": f"{mode.lower()}-{n}", "namespace": NAMESPACE},
            "spec": spec,
        }
    )


def feed_inventory(sub: Subscription, replicas: int) -> FeedInventory:
    feed = sub.spec.feeds[0].to_json_dict()
    requirements = {"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
    return FeedInventory.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "FeedInventory",
            "metadata": {"name": sub.name, "namespace": NAMESPACE},
            "spec": {"feeds": [{**feed, "desiredReplicas": replicas, "replicaRequirements": requirements}]},
        }
    )


async def request_reply_rate(nc: NATS, count: int) -> float:
    """One client's sequential request/reply round trips per second against a local responder."""

    async def echo(msg: Msg) -> None:
        await msg.respond(msg.data)

    sub = await nc.subscribe("bench.echo", cb=echo)
    await barrier(nc)
    start = time.perf_counter()
    for _ in range(count):
        await nc.request("bench.echo", b"x" * 64, timeout=5)
    rate = count / (time.perf_counter() - start)
    await sub.unsubscribe()
    return rate


class BindingWatch:
    """Counts Subscriptions whose binding has been written with a decision (core NATS on the KV subjects)."""

    def __init__(self) -> None:
        self.decided: dict[str, float] = {}
        self.placed: set[str] = set()

    async def start(self, nc: NATS) -> None:
        prefix = kv_subject_prefix(BINDINGS_BUCKET)

        async def seen(msg: Msg) -> None:
            if not msg.data:
                return
            binding = json.loads(msg.data)
            key = msg.subject[len(prefix) :]
            if binding.get("specHash"):
                self.decided.setdefault(key, time.perf_counter())
                if binding.get("bindingClusters"):
                    self.placed.add(key)

        await nc.subscribe(prefix + ">", cb=seen)

    async def wait(self, keys: set[str], timeout: float) -> float | None:
        """The time the last of `keys` was decided, or None on timeout."""
        deadline = time.monotonic() + timeout
        while not keys <= self.decided.keys():
            if time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.02)
        return max(self.decided[k] for k in keys)


async def gather_bounded(jobs: list[Callable[[], Any]], width: int = 64) -> None:
    for i in range(0, len(jobs), width):
        await asyncio.gather(*(job() for job in jobs[i : i + width]))


async def run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="cnet-bench-sched-"))
    server = NatsServer(store_dir=workdir / "nats").start()
    services = [
        ServiceProcess(
            name=name,
            module=f"clusternet_nats.{name}",
            args=["--nats-url", server.url, "--log-level", args.log_level],
            log_path=workdir / f"{name}.log",
            health_port=free_port(),
        )
        for name in ("scheduler", "predictor")
    ]
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    try:
        await ensure_buckets(js)
        clusters: ObjectStore[ManagedCluster] = ObjectStore(js, KindInfo.of(ManagedCluster))
        inventories = StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory)
        t = time.perf_counter()
        await gather_bounded(
            [lambda i=i: clusters.create(cluster(i, args.groups)) for i in range(args.clusters)]
            + [
                lambda i=i: inventories.put(object_key(*cluster_name(i)), inventory(i, args.nodes), 0)
                for i in range(args.clusters)
            ]
        )
        print(f"wrote {args.clusters} ManagedClusters and node inventories directly in {time.perf_counter() - t:.1f}s")
        for service in services:
            service.start()
        wait_ready(services)
        pids = {service.name: service.proc.pid for service in services if service.proc is not None}
        watch = BindingWatch()
        await watch.start(nc)
        subs: ObjectStore[Subscription] = ObjectStore(js, KindInfo.of(Subscription))
        finvs: ObjectStore[FeedInventory] = ObjectStore(js, KindInfo.of(FeedInventory))
        reference = await request_reply_rate(nc, args.reference_requests)
        rows = []
        for mode in MODES:
            load_before = os.getloadavg()[0]
            batch = [subscription(mode, n, args.groups) for n in range(args.subs)]
            keys = {object_key(NAMESPACE, sub.name) for sub in batch}
            if mode != "Replication":
                await gather_bounded([lambda s=s: finvs.create(feed_inventory(s, args.replicas)) for s in batch])
            cpu_before = cpu_seconds(pids)
            start = time.perf_counter()
            await gather_bounded([lambda s=s: subs.create(s) for s in batch])
            written = time.perf_counter() - start
            last = await watch.wait(keys, args.timeout)
            load_after = os.getloadavg()[0]
            cpu = {name: after - cpu_before[name] for name, after in cpu_seconds(pids).items()}
            decided = len(keys & watch.decided.keys())
            placed = len(keys & watch.placed)
            elapsed = (last if last is not None else time.perf_counter()) - start
            rows.append((mode, decided, placed, elapsed, written, load_before, load_after, cpu))
            mode_reference = await request_reply_rate(nc, args.reference_requests)
            rows[-1] = (*rows[-1], mode_reference)
        print(
            f"\n{args.clusters} clusters ({args.nodes} nodes each), {args.groups} groups "
            f"(a Subscription selects {args.clusters // args.groups}), {args.subs} Subscriptions per mode"
        )
        print(f"raw NATS request/reply (1 client, sequential) before the modes: {reference:,.0f}/s")
        header = f"{'mode':<12}{'decided':>9}{'placed':>8}{'seconds':>9}{'subs/s':>9}{'writes/s':>10}"
        print(header + f"{'req/reply/s':>13}{'load 1m':>14}   CPU s (scheduler, predictor)")
        for mode, decided, placed, elapsed, written, before, after, cpu, ref in rows:
            print(
                f"{mode:<12}{decided:>9}{placed:>8}{elapsed:>9.2f}{decided / elapsed:>9.0f}"
                f"{args.subs / written:>10.0f}{ref:>13,.0f}{before:>8.2f}->{after:<6.2f}"
                f"{cpu['scheduler']:>6.2f}, {cpu['predictor']:.2f}"
            )
        return 0
    finally:
        await nc.close()
        for service in services:
            service.stop()
        server.stop()
        server.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--groups", type=int, default=10)
    parser.add_argument("--subs", type=int, default=500)
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--reference-requests", type=int, default=3000)
    parser.add_argument("--log-level", default="warning")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())

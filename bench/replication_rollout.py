"""Benchmark: one Replication Subscription to N simulated clusters.

Prints the time from `cnet apply` to every Description being Success (and the Subscription
showing completedReleases == N), and the resident memory of the hub side (nats-server, hub,
scheduler, deployer, predictor) and of the agent process hosting the simulated clusters.

    .venv/bin/python bench/replication_rollout.py --clusters 100
    .venv/bin/python bench/replication_rollout.py --clusters 1000 --nats-cluster 3

`--nats-cluster 3` runs NATS as a 3-server JetStream cluster with R3 buckets. Beside the figures
it prints a raw reference measured in the same run on the same NATS: nats-py `publish_async`
into a stream with the buckets' replicas (testing/reference.py, as every bench), and the load
average, since the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from clusternet_nats.testing.natsserver import NatsCluster
from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.system import System

REPO = Path(__file__).resolve().parents[1]
SUBSCRIPTION = "/apis/apps.clusternet.io/v1alpha1/namespaces/default/subscriptions/bench-replication"
DESCRIPTIONS = "/apis/apps.clusternet.io/v1alpha1/descriptions"

MANIFESTS = """
apiVersion: v1
kind: Namespace
metadata: {name: bench}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: bench}
spec:
  replicas: 2
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
  feeds:
    - {apiVersion: v1, kind: Namespace, name: bench}
    - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: bench}
    - {apiVersion: v1, kind: Service, name: web, namespace: bench}
"""


def rss_mib(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 2**20


def rollout(system: System, manifest_file: Path, clusters: int, timeout: float) -> float | None:
    """`cnet apply` of the manifests, then seconds until every Description is Success and the
    Subscription counts `clusters` completed releases; None (and why, printed) after `timeout`."""
    cnet = Path(sys.executable).parent / "cnet"
    started = time.monotonic()
    subprocess.run([str(cnet), "--config", str(system.cnet_config), "apply", "-f", str(manifest_file)], check=True)
    detail = ""
    while True:
        sub = system.hub_get(SUBSCRIPTION)
        status = sub.get("status") or {}
        done = status.get("completedReleases", 0)
        if done >= clusters:
            descs = system.hub_get(DESCRIPTIONS)["items"]
            ok = sum(1 for d in descs if (d.get("status") or {}).get("phase") == "Success")
            if ok >= clusters:
                return time.monotonic() - started
            detail = f"{ok} descriptions Success"
        else:
            detail = f"completedReleases {done}/{status.get('desiredReleases', 0)}"
        if time.monotonic() - started > timeout:
            print(f"TIMEOUT after {timeout}s: {detail}")
            return None
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--nats-cluster", type=int, default=1, help="nats-servers in one JetStream cluster (R3)")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="cnet-bench-"))
    system = System(
        workdir,
        sim_clusters=args.clusters,
        labels_cycle="env=bench",
        log_level=args.log_level,
        nats_cluster=args.nats_cluster,
    )
    t0 = time.monotonic()
    system.start(timeout=300)
    startup = time.monotonic() - t0
    manifest_file = workdir / "bench.yaml"
    manifest_file.write_text(MANIFESTS)
    try:
        mcls = system.hub_get("/apis/clusters.clusternet.io/v1beta1/managedclusters")["items"]
        print(f"clusters registered: {len(mcls)} (system start {startup:.1f}s)")
        elapsed = rollout(system, manifest_file, args.clusters, args.timeout)
        if elapsed is None:
            return 1
        load = load_average()
        replicas = system.stream_replicas
        nats_kind = f"{args.nats_cluster}-server cluster, R{replicas}" if args.nats_cluster > 1 else "1 server"
        print(f"apply -> all {args.clusters} Descriptions Success: {elapsed:.2f}s (NATS {nats_kind}, load {load})")
        reference = asyncio.run(publish_async_rate(system.nats_url, int(system.stream_replicas)))
        print(f"  raw reference: nats-py publish_async {reference:,.0f} msgs/s (R{system.stream_replicas})")
        hub_side = {name: rss_mib(pid) for name, pid in system.hub_side_pids().items()}
        if isinstance(system.nats, NatsCluster):
            hub_side.pop("nats-server", None)
            hub_side |= {f"nats {s.server_name}": rss_mib(s.proc.pid) for s in system.nats.servers if s.proc}
        for name, mib in sorted(hub_side.items()):
            print(f"  rss {name:12s} {mib:7.1f} MiB")
        print(f"hub-side memory total: {sum(hub_side.values()):.1f} MiB")
        agent = system.services["agent"].proc
        if agent is not None:
            print(f"agent process ({args.clusters} simulated clusters): {rss_mib(agent.pid):.1f} MiB")
    finally:
        system.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: one Subscription with a HelmChart and 3 Manifests to N simulated clusters.

The whole system as processes (testing/system.py), the agent hosting N simulated clusters that
render the chart with the real helm (`--helm-binary`, rendered once per chart and values), and a
chart repository this process serves (the `greeter` chart, testing/charts.py). Two figures:

1. apply: from `cnet apply` of the HelmChart, a Namespace, Deployment and Service, a Helm-type
   Globalization and the Subscription, to every Description (2 per cluster: Generic and Helm)
   Success and the Subscription at completedReleases = N;
2. re-values: the Globalization's Helm value changed (ApplyNow) for all N clusters, the rate at which the
   deployer rewrites the N Helm Descriptions (N / time from `cnet apply` to the last one written),
   and the time until all N are Success again.

Progress is read from the buckets by informers in this process (no polling of the hub's API,
which would load the hub it measures). Printed beside the figures, measured in the same run on
the same NATS: nats-py `publish_async` into a stream (testing/reference.py) and the load average.

    .venv/bin/python bench/helm_rollout.py --clusters 1000
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

import nats
import yaml
from clusternet_nats.api.apps import DeployerType, Description, DescriptionPhase, DescriptionStatus
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.runtime.logging import configure_logging
from clusternet_nats.store import ObjectStore
from clusternet_nats.store.informer import Informer
from clusternet_nats.testing.charts import GREETER, ChartRepo
from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.system import System
from clusternet_nats.testing.tools import ensure_tools
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from rollout import MANIFESTS as REPLICATION_MANIFESTS

SUBSCRIPTION = "/apis/apps.clusternet.io/v1alpha1/namespaces/default/subscriptions/bench-helm"

CHART = """
apiVersion: apps.clusternet.io/v1alpha1
kind: HelmChart
metadata: {{name: greeter, namespace: default}}
spec: {{repo: "{repo}", chart: greeter, version: 0.1.0, targetNamespace: greeter}}
"""
CHART_FEED = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart", "namespace": "default", "name": GREETER}


def manifests(repo: str) -> str:
    """rollout's Namespace, Deployment and Service, and its Subscription renamed and
    given the HelmChart as a fourth feed."""
    docs = list(yaml.safe_load_all(REPLICATION_MANIFESTS))
    for doc in docs:
        if doc["kind"] == "Subscription":
            doc["metadata"]["name"] = SUBSCRIPTION.rsplit("/", 1)[1]
            doc["spec"]["feeds"].insert(0, CHART_FEED)
    return CHART.format(repo=repo) + "---\n" + yaml.safe_dump_all(docs)


GLOBALIZATION = """
apiVersion: apps.clusternet.io/v1alpha1
kind: Globalization
metadata: {{name: greeter-values}}
spec:
  feed: {{apiVersion: apps.clusternet.io/v1alpha1, kind: HelmChart, name: greeter, namespace: default}}
  overridePolicy: ApplyNow
  overrides:
    - {{name: greeting, type: Helm, value: '{{"greeting": "{greeting}"}}'}}
"""


def cnet_apply(system: System, path: Path) -> None:
    cnet = Path(sys.executable).parent / "cnet"
    subprocess.run([str(cnet), "--config", str(system.cnet_config), "apply", "-f", str(path)], check=True)


class Progress:
    """The Descriptions and their statuses, mirrored from the buckets as they change."""

    def __init__(self, nc: NATS) -> None:
        js = nc.jetstream()
        info = KindInfo.of(Description)
        store: ObjectStore[Description] = ObjectStore(js, info)
        self.descriptions: Informer[Description] = Informer(
            nc, js, info.bucket, lambda _key, data, revision: store.decode(data, revision)
        )
        self.statuses: Informer[DescriptionStatus] = Informer(
            nc, js, info.status_bucket or "", lambda _key, data, _rev: DescriptionStatus.model_validate_json(data)
        )
        self.written: dict[str, float] = {}
        """When each Description was last written (seen here)."""
        self.descriptions.add_handler(lambda key, _desc: self.written.__setitem__(key, time.monotonic()))

    async def start(self) -> None:
        for informer in (self.descriptions, self.statuses):
            await informer.start()
            await informer.wait_synced(60)

    async def stop(self) -> None:
        await self.descriptions.stop()
        await self.statuses.stop()

    def helm_keys(self) -> list[str]:
        return [key for key, desc in self.descriptions.items() if desc.spec.deployer == DeployerType.HELM]

    def successes(self, keys: list[str] | None = None) -> int:
        wanted = keys if keys is not None else self.descriptions.keys()
        return sum(
            1
            for key in wanted
            if (status := self.statuses.get(key)) is not None and status.phase == DescriptionPhase.SUCCESS
        )


async def _at_least(count: Awaitable[int], wanted: int) -> bool:
    return await count >= wanted


async def completed_releases(system: System, clusters: int) -> bool:
    sub = await asyncio.to_thread(system.hub_get, SUBSCRIPTION)
    return bool(((sub or {}).get("status") or {}).get("completedReleases") == clusters)


async def registered(system: System) -> int:
    found = await asyncio.to_thread(system.hub_get, "/apis/clusters.clusternet.io/v1beta1/managedclusters")
    return len(found["items"])


async def measure(system: System, repo: ChartRepo, clusters: int, timeout: float) -> None:
    workdir = system.workdir
    await eventually(lambda: _at_least(registered(system), clusters), timeout, 1.0, what=f"{clusters} clusters")
    nc = await nats.connect(servers=system.nats_url.split(","))
    progress = Progress(nc)
    try:
        await progress.start()
        (workdir / "bench.yaml").write_text(manifests(repo.url) + "---" + GLOBALIZATION.format(greeting="v1"))
        started = time.monotonic()
        await asyncio.to_thread(cnet_apply, system, workdir / "bench.yaml")
        await eventually(
            lambda: progress.successes() >= 2 * clusters, timeout, 0.2, what=f"{2 * clusters} Descriptions Success"
        )
        await eventually(lambda: completed_releases(system, clusters), timeout, 0.5, what="completedReleases = N")
        applied = time.monotonic() - started
        load_applied = load_average()

        helm = progress.helm_keys()
        before = {key: progress.descriptions.revision(key) for key in helm}
        (workdir / "values.yaml").write_text(GLOBALIZATION.format(greeting="v2"))
        changed = time.monotonic()
        await asyncio.to_thread(cnet_apply, system, workdir / "values.yaml")

        def rewritten() -> bool:
            return all(progress.descriptions.revision(key) > before[key] for key in helm)

        await eventually(rewritten, timeout, 0.2, what=f"{len(helm)} Helm Descriptions rewritten")
        last_write = max(progress.written[key] for key in helm) - changed
        await eventually(
            lambda: progress.successes(helm) == len(helm), timeout, 0.2, what="every Helm Description Success again"
        )
        resettled = time.monotonic() - changed
        load_values = load_average()
        reference = await publish_async_rate(system.nats_url, int(system.stream_replicas))
    finally:
        await progress.stop()
        await nc.close()

    print(f"apply -> {2 * clusters} Descriptions Success, completedReleases {clusters}: {applied:.2f}s")
    print(f"  load average {load_applied}")
    print(
        f"Helm Globalization changed for {len(helm)} clusters: {len(helm) / last_write:,.0f} Description updates/s "
        f"(last written {last_write:.2f}s after apply; all Success again {resettled:.2f}s)"
    )
    print(f"  load average {load_values}")
    print(f"raw reference: nats-py publish_async {reference:,.0f} msg/s (R{system.stream_replicas}, same NATS)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    configure_logging(args.log_level)  # this process's informers, like the services

    tools = ensure_tools()
    workdir = Path(tempfile.mkdtemp(prefix="cnet-bench-helm-"))
    repo = ChartRepo(tools.helm, workdir / "repo")
    repo.add_chart(GREETER, "0.1.0")
    repo.start()
    system = System(
        workdir / "system",
        sim_clusters=args.clusters,
        labels_cycle="env=bench",
        log_level=args.log_level,
        agent_args=("--helm-binary", str(tools.helm)),
    )
    try:
        started = time.monotonic()
        system.start(timeout=600)
        print(f"{args.clusters} simulated clusters, system started in {time.monotonic() - started:.1f}s")
        asyncio.run(measure(system, repo, args.clusters, args.timeout))
    finally:
        system.stop()
        repo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the hub's Kubernetes API over the store: a list of many Subscriptions and a watch
delivering many changes, each beside the raw KV operation measured in the same run.

A nats-server process and the hub in this process (HTTPS, admin token, as kubectl talks to it).
`--subs` Subscriptions are written straight into the store in one namespace, then:

* list: `GET .../subscriptions` whole (`--lists` times; median latency, objects/s) and paged
  with `limit=500` as kubectl pages, beside the raw KV list of the same keys (one consumer pass,
  `JsonBucket.entries`) and the same with status joined (`ObjectViews.list`).
* watch: a `?watch=true` from the list's resourceVersion while `--changes` Subscriptions are
  updated as fast as the store takes them; throughput (first write to last event) and latency
  (write acknowledged to event read, p50/p99), beside a raw KV watch (store/watch.py's ordered
  consumer) of the same writes.
The 1-minute load average is printed before and after.

    .venv/bin/python bench/hub_api.py --subs 10000 --changes 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import nats
from clusternet_nats.api import by_kind
from clusternet_nats.api.apps import Subscription
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.runtime.logging import configure_logging
from clusternet_nats.store import ObjectStore, ensure_buckets
from clusternet_nats.store.views import ObjectViews
from clusternet_nats.store.watch import bucket_revision, watch_bucket
from clusternet_nats.testing.natsserver import NatsServer

NAMESPACE = "bench"
PATH = f"/apis/apps.clusternet.io/v1alpha1/namespaces/{NAMESPACE}/subscriptions"


def subscription(i: int, label: str = "v1") -> Subscription:
    return Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": f"sub-{i:05d}", "namespace": NAMESPACE, "labels": {"rev": label}},
            "spec": {
                "subscribers": [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}],
                "feeds": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": f"web-{i}", "namespace": NAMESPACE}],
            },
        }
    )


async def _timed(what: Any) -> float:
    start = time.perf_counter()
    await what
    return time.perf_counter() - start


async def _list_all(http: aiohttp.ClientSession, limit: int = 0) -> int:
    count, token = 0, ""
    while True:
        params = {"limit": str(limit)} if limit else {}
        if token:
            params["continue"] = token
        async with http.get(PATH, params=params) as resp:
            body = json.loads(await resp.read())
        count += len(body["items"])
        token = body["metadata"].get("continue", "")
        if not token:
            return count


async def _updates(store: ObjectStore[Any], changes: int, label: str) -> dict[str, float]:
    """Updates `changes` Subscriptions (8 in flight); when each write was acknowledged, by name."""
    acked: dict[str, float] = {}
    queue = list(range(changes))

    async def worker() -> None:
        while queue:
            i = queue.pop()
            await store.apply(subscription(i, label))
            acked[f"sub-{i:05d}"] = time.perf_counter()

    await asyncio.gather(*(worker() for _ in range(8)))
    return acked


def _latency(acked: dict[str, float], seen: dict[str, float]) -> str:
    values = sorted((seen[name] - acked[name]) * 1000 for name in acked if name in seen)
    if not values:
        return "n/a"
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return f"p50 {statistics.median(values):.1f} ms, p99 {p99:.1f} ms"


async def _hub_watch(resp: aiohttp.ClientResponse, changes: int, seen: dict[str, float]) -> None:
    async with resp:
        async for line in resp.content:
            if not line.strip():
                continue
            event = json.loads(line)
            if event["type"] == "MODIFIED":
                seen[event["object"]["metadata"]["name"]] = time.perf_counter()
                if len(seen) >= changes:
                    return


async def run(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-hub-api-"))
    server = NatsServer(store_dir=workdir / "nats").start()
    try:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await ensure_buckets(js)
        info = by_kind("Subscription")
        store: ObjectStore[Any] = ObjectStore(js, info)
        t = time.perf_counter()
        for start in range(0, args.subs, 500):
            await asyncio.gather(*(store.create(subscription(i)) for i in range(start, min(start + 500, args.subs))))
        print(f"wrote {args.subs} Subscriptions directly in {time.perf_counter() - t:.1f}s")
        load_before = os.getloadavg()[0]
        async with running_hub(server.url) as hub, hub.session() as http:
            views = ObjectViews(js)
            whole = [await _timed(_list_all(http)) for _ in range(args.lists)]
            paged = [await _timed(_list_all(http, 500)) for _ in range(args.lists)]
            raw = [await _timed(store.bucket.entries(f"{NAMESPACE}.>")) for _ in range(args.lists)]
            joined = [await _timed(views.list(info, NAMESPACE)) for _ in range(args.lists)]
            print(f"\nlist of {args.subs} Subscriptions (median of {args.lists}):")
            for what, times in (
                ("hub GET, whole", whole),
                ("hub GET, limit=500 pages", paged),
                ("raw KV entries() (reference)", raw),
                ("ObjectViews.list (status joined)", joined),
            ):
                median = statistics.median(times)
                print(f"  {what:<34}{median * 1000:>9.0f} ms {args.subs / median:>12,.0f} objects/s")

            async with http.get(PATH, params={"limit": "1"}) as resp:
                version = (await resp.json())["metadata"]["resourceVersion"]
            seen: dict[str, float] = {}
            # The hub answers a watch's headers once its consumers exist: the writes start after that.
            opened = await http.get(PATH, params={"watch": "true", "resourceVersion": version})
            watcher = asyncio.create_task(_hub_watch(opened, args.changes, seen))
            first = time.perf_counter()
            acked = await _updates(store, args.changes, "v2")
            await asyncio.wait_for(watcher, 120)
            hub_rate = args.changes / (max(seen.values()) - first)
            hub_latency = _latency(acked, seen)

            raw_seen: dict[str, float] = {}
            after = await bucket_revision(js, info.bucket)
            async with watch_bucket(js, info.bucket, f"{NAMESPACE}.>", after) as changes:

                async def follow() -> None:
                    async for change in changes:
                        raw_seen[change.key.split(".", 1)[1]] = time.perf_counter()
                        if len(raw_seen) >= args.changes:
                            return

                raw_task = asyncio.create_task(follow())
                first = time.perf_counter()
                raw_acked = await _updates(store, args.changes, "v3")
                await asyncio.wait_for(raw_task, 120)
            raw_rate = args.changes / (max(raw_seen.values()) - first)
            print(f"\nwatch delivering {args.changes} changes (8 writers):")
            print(f"  hub ?watch=true                   {hub_rate:>9,.0f} events/s   latency {hub_latency}")
            raw_latency = _latency(raw_acked, raw_seen)
            print(f"  raw KV ordered consumer (ref.)    {raw_rate:>9,.0f} events/s   latency {raw_latency}")
        load_after = os.getloadavg()[0]
        print(f"\nload average (1 min): {load_before:.2f} before, {load_after:.2f} after; {os.cpu_count()} CPUs")
        await nc.close()
    finally:
        server.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subs", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=1_000)
    parser.add_argument("--lists", type=int, default=5)
    configure_logging("warning")  # the hub's controllers log each Subscription at info
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

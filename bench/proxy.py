"""Benchmark: kubectl's traffic through the hub's proxy (issue 12), each figure beside the same
thing done directly to the child in the same run.

Processes as deployed: a hub nats-server (JetStream domain `hub`, a leaf-node port), a leaf
nats-server dialling it (the child's side of the tunnel), the hub (HTTPS, admin token) on the hub
server, and two agents on the leaf server only: one for a real control plane (etcd +
kube-apiserver, testing/kube.py) with the kube backend, one hosting `--sim-clusters` simulated
clusters. Every proxied request goes hub → NATS → leaf link → agent → API server and back.

* small GET (`/api/v1/namespaces/default`): latency p50/p99 of `--requests` sequential requests
  and throughput with `--concurrency` in flight, through the proxy and straight to the child's
  kube-apiserver (same client, same TLS, same object);
* watch event latency: a ConfigMap updated `--events` times on the child's apiserver, time from
  the write's answer to the event on a watch through the proxy and on a direct watch;
* `--watches` concurrent watches through the proxy over the simulated clusters: hub and agent
  memory per watch (RSS after minus before, divided by the watches), and how long one change in
  every simulated cluster takes to reach all of them.
Raw reference printed in the same run: nats-py `publish_async` into a JetStream stream on the
hub server; the load average before and after.

    .venv/bin/python bench/proxy.py --requests 500 --concurrency 16 --events 200 --watches 1000 --sim-clusters 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import ssl
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import psutil
from clusternet_nats.api.proxy import PROXY_PREFIX
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.leaf import hub_and_leaf
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.system import ServiceProcess, ensure_admin_token, wait_ready
from clusternet_nats.testing.tools import ensure_tools
from clusternet_nats.testing.waiting import eventually

SMALL = "/api/v1/namespaces/default"
CLUSTERS = "/apis/clusters.clusternet.io/v1beta1/managedclusters"


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:6.2f} ms   p99 {p99 * 1000:6.2f} ms"


def service(name: str, module: str, workdir: Path, args: list[str], env: dict[str, str]) -> ServiceProcess:
    return ServiceProcess(
        name=name,
        module=module,
        args=[*args, "--log-level", "warning"],
        log_path=workdir / f"{name}.log",
        health_port=free_port(),
        env=env,
    )


class Client:
    """One aiohttp session per side, same settings, so the two sides differ only by the path."""

    def __init__(self, base: str, context: ssl.SSLContext, headers: dict[str, str]) -> None:
        connector = aiohttp.TCPConnector(ssl=context, limit=0)
        timeout = aiohttp.ClientTimeout(total=None, connect=30)
        self.session = aiohttp.ClientSession(base, headers=headers, connector=connector, timeout=timeout)

    async def get(self, path: str) -> float:
        start = time.perf_counter()
        async with self.session.get(path) as resp:
            await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"GET {path}: {resp.status} {await resp.text()}")
        return time.perf_counter() - start


async def latency_and_rate(get: Callable[[], Awaitable[float]], requests: int, concurrency: int) -> tuple[str, float]:
    for _ in range(20):  # warm connections and caches
        await get()
    latencies = [await get() for _ in range(requests)]
    remaining = requests * 2

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await get()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return percentiles(latencies), requests * 2 / (time.perf_counter() - start)


Side = tuple[Client, str]
"""A client and the path prefix it reaches a cluster's API server at ("" when direct)."""


async def watch_latency(writer: Side, watchers: dict[str, Side], events: int) -> dict[str, str]:
    """Updates one ConfigMap `events` times through `writer`, one write in flight; per watcher,
    latency from each write's start to its MODIFIED (it can arrive before the write's answer)."""
    client, prefix = writer
    path = "/api/v1/namespaces/default/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench"}, "data": {"n": "0"}}
    async with client.session.post(prefix + path, json=body) as resp:
        created = await resp.json()
        if resp.status != 201:
            raise RuntimeError(f"POST configmap: {resp.status} {created}")
    params = {"watch": "1", "resourceVersion": created["metadata"]["resourceVersion"]}
    params["fieldSelector"] = "metadata.name=bench"
    streams = {side: await c.session.get(p + path, params=params) for side, (c, p) in watchers.items()}
    seen: dict[str, dict[str, float]] = {side: {} for side in streams}
    for side, stream in streams.items():
        if stream.status != 200:
            raise RuntimeError(f"watch {side}: {stream.status} {await stream.text()}")

    async def follow(side: str) -> None:
        async for line in streams[side].content:
            event = json.loads(line)
            if event["type"] == "MODIFIED":
                seen[side][event["object"]["data"]["n"]] = time.perf_counter()

    readers = [asyncio.create_task(follow(side)) for side in streams]
    written: dict[str, float] = {}
    headers = {"Content-Type": "application/merge-patch+json"}
    waiting_for = list(streams)
    for n in map(str, range(1, events + 1)):
        patch = json.dumps({"data": {"n": n}})
        written[n] = time.perf_counter()
        async with client.session.patch(f"{prefix}{path}/bench", data=patch, headers=headers) as resp:
            if resp.status != 200:
                raise RuntimeError(f"PATCH configmap: {resp.status} {await resp.text()}")
        # One write in flight: latency, not queueing, is measured (the readers stamp arrivals).
        # A side that delivers nothing in 10 s is reported as such, not waited for again.
        try:
            sides = tuple(waiting_for)
            await eventually(lambda n=n, sides=sides: all(n in seen[s] for s in sides), timeout=10, interval=0.001)
        except TimeoutError:
            waiting_for = [s for s in waiting_for if n in seen[s]]
    for reader in readers:
        reader.cancel()
    for stream in streams.values():
        stream.close()

    def figure(side: str) -> str:
        arrived = [seen[side][n] - written[n] for n in written if n in seen[side]]
        return percentiles(arrived) if arrived else "no event arrived (10 s)"

    return {side: figure(side) for side in watchers}


async def many_watches(
    proxied: Client, prefixes: list[str], watches: int, hub: psutil.Process, agent: psutil.Process
) -> None:
    hub_before, agent_before = hub.memory_info().rss, agent.memory_info().rss
    path = "/api/v1/namespaces"
    opened: list[aiohttp.ClientResponse] = []
    start = time.perf_counter()
    for batch in range(0, watches, 100):
        heads = [
            proxied.session.get(prefixes[i % len(prefixes)] + path, params={"watch": "1"})
            for i in range(batch, min(batch + 100, watches))
        ]
        opened += await asyncio.gather(*heads)
    assert all(r.status == 200 for r in opened), {r.status for r in opened}
    open_time = time.perf_counter() - start
    marker = f"bench-{int(time.time())}"
    started, got = [0], [0]

    async def follow(resp: aiohttp.ClientResponse) -> None:
        first = True
        async for line in resp.content:
            if first:
                started[0] += 1
                first = False
            if marker.encode() in line:
                got[0] += 1
                return

    readers = [asyncio.create_task(follow(r)) for r in opened]
    # Every watch streaming (its initial ADDED events arrived) before memory is sampled.
    await eventually(lambda: started[0] == watches, timeout=120, what="every watch streaming")
    hub_rss, agent_rss = hub.memory_info().rss, agent.memory_info().rss
    start = time.perf_counter()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": marker}}
    created = [
        proxied.session.post(prefix + path, json=namespace)
        for prefix in prefixes
    ]
    for resp in await asyncio.gather(*created):
        resp.release()
    await asyncio.wait_for(asyncio.gather(*readers), 120)
    fan_out = time.perf_counter() - start
    per_hub = (hub_rss - hub_before) / watches / 1024
    per_agent = (agent_rss - agent_before) / watches / 1024
    print(f"\n{watches} concurrent watches through the proxy over {len(prefixes)} simulated clusters:")
    print(f"  opened in {open_time:.1f} s; hub RSS {hub_before / 2**20:.0f} -> {hub_rss / 2**20:.0f} MiB")
    print(f"  hub memory per watch    {per_hub:8.1f} KiB")
    print(f"  agent memory per watch  {per_agent:8.1f} KiB (the agent holding the simulated clusters)")
    print(f"  one change in each cluster reached all {got[0]} watches in {fan_out * 1000:.0f} ms")
    for resp in opened:
        resp.close()


async def run(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    hub_nats, leaf_nats = hub_and_leaf(workdir)
    control_plane = ControlPlane("child", ensure_tools(), workdir / "child")
    services: list[ServiceProcess] = []
    try:
        await control_plane.start_async()
        hub_nats.start()
        leaf_nats.start()
        token_file = workdir / "tokens.csv"
        token = ensure_admin_token(token_file)
        hub_port = free_port()
        hub_args = ["--nats-url", hub_nats.url, "--listen", f"127.0.0.1:{hub_port}"]
        hub_args += ["--cert-dir", str(workdir / "hub-certs"), "--token-auth-file", str(token_file)]
        agent_env = {"CNET_NATS_URL": leaf_nats.url, "CNET_JETSTREAM_DOMAIN": "hub"}
        kube_agent = ["--cluster-name", "child", "--backend", "kube", "--kubeconfig", str(control_plane.kubeconfig)]
        sim_agent = ["--cluster-name", "sim", "--sim-clusters", str(args.sim_clusters)]
        services = [
            service("hub", "clusternet_nats.hub", workdir, hub_args, {}),
            service("agent-kube", "clusternet_nats.agent", workdir, kube_agent, agent_env),
            service("agent-sim", "clusternet_nats.agent", workdir, sim_agent, agent_env),
        ]
        for s in services:
            s.start()
        await asyncio.to_thread(wait_ready, services, 120)
        reference = await publish_async_rate(hub_nats.url)
        load_before = load_average()

        hub_tls = ssl.create_default_context(cafile=str(workdir / "hub-certs" / "ca.crt"))
        hub = Client(f"https://127.0.0.1:{hub_port}", hub_tls, {"Authorization": f"Bearer {token}"})
        pki = control_plane.pki
        child_tls = ssl.create_default_context(cafile=str(pki.ca_cert))
        child_tls.load_cert_chain(pki.admin_cert, pki.admin_key)
        direct = Client(control_plane.server, child_tls, {})

        async def cluster_ids() -> dict[str, str] | None:
            async with hub.session.get(CLUSTERS) as resp:
                items = (await resp.json()).get("items") or []
            ids = {i["metadata"]["name"]: i["spec"].get("clusterId") for i in items}
            return ids if len(ids) == 1 + args.sim_clusters and all(ids.values()) else None

        ids = await eventually(cluster_ids, timeout=120, what="every cluster registered")
        child = f"{PROXY_PREFIX}{ids['child']}/proxy/direct"
        await eventually(lambda: hub.get(child + SMALL), timeout=60, what="the child reachable through the proxy")
        sims = [f"{PROXY_PREFIX}{cid}/proxy/direct" for name, cid in sorted(ids.items()) if name != "child"]

        print(f"small GET {SMALL} ({args.requests} sequential, then {args.concurrency} in flight):")
        for what, client, prefix in (("through the hub's proxy", hub, child), ("direct to kube-apiserver", direct, "")):
            get = lambda c=client, p=prefix: c.get(p + SMALL)  # noqa: E731
            lat, rate = await latency_and_rate(get, args.requests, args.concurrency)
            print(f"  {what:<28} {lat}   {rate:8,.0f} req/s")
        sim_lat, sim_rate = await latency_and_rate(lambda: hub.get(sims[0] + SMALL), args.requests, args.concurrency)
        print(f"  {'proxy to a simulated cluster':<28} {sim_lat}   {sim_rate:8,.0f} req/s")

        kube = await watch_latency((direct, ""), {"proxy": (hub, child), "direct": (direct, "")}, args.events)
        sim = await watch_latency((hub, sims[0]), {"sim": (hub, sims[0])}, args.events)
        print(f"\nwatch event latency ({args.events} ConfigMap updates, one in flight, write sent -> event read):")
        print(f"  kube child, written directly, watched through the proxy  {kube['proxy']}")
        print(f"  kube child, written directly, watched directly           {kube['direct']}")
        print(f"  simulated cluster, written and watched through the proxy {sim['sim']}")

        hub_proc = psutil.Process(services[0].proc.pid) if services[0].proc else psutil.Process()
        agent_proc = psutil.Process(services[2].proc.pid) if services[2].proc else psutil.Process()
        await many_watches(hub, sims, args.watches, hub_proc, agent_proc)

        print(f"\nraw reference, same run: nats-py publish_async into a JetStream stream {reference:,.0f} msgs/s")
        print(f"load average: {load_before} before, {load_average()} after; {psutil.cpu_count()} CPUs")
        await hub.session.close()
        await direct.session.close()
    finally:
        for s in services:
            s.stop()
        leaf_nats.stop()
        hub_nats.stop()
        await control_plane.stop_async()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--watches", type=int, default=1000)
    parser.add_argument("--sim-clusters", type=int, default=20)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

"""Benchmark: the bus alone fanning Descriptions out to a fleet, without the services around it.

One nats-server with the project's buckets (`store.ensure_buckets`), one consumer per cluster on
the Descriptions stream made as the system makes them (`--consumer push`: the hub's, ack none,
memory state, 30 s heartbeats, hub/intake/feed.py; `pull`: an agent's own, with one lingering
pull request, store/informer.py), then one write per cluster (`--size` bytes, default 2 KB as
the rollout bench's Descriptions), pipelined. Prints the write rate, the time until every
consumer has delivered its cluster's write, and nats-server's CPU, beside nats-py
`publish_async` into a stream on the same server in the same run; then nats-server's CPU over
`--idle` seconds, every consumer heartbeating once.

It says what a rollout's fan-out costs the bus itself, so a rollout's figures (bench/rollout.py)
can be read against it: the consumers' filters (`--filter wildcard`, a cluster's namespace then
`>`, as the system's; `literal`, one subject per cluster) and their kind can be compared alone.
`--rounds N` writes every cluster N times, each round once the last is delivered: the first
round is a fleet's first rollout, the later ones every change after it, which cost nats-server
more with wildcard filters (docs/architecture.md, "Known limits"). `--streams S` spreads the
clusters over S buckets made like the Descriptions bucket (cluster i's consumer and writes in
bucket i mod S), to measure what Descriptions sharded over several streams would cost instead.

    .venv/bin/python bench/fanout.py --clusters 10000
    .venv/bin/python bench/fanout.py --clusters 10000 --rounds 3
    .venv/bin/python bench/fanout.py --clusters 10000 --consumer pull --filter literal
    .venv/bin/python bench/fanout.py --clusters 10000 --rounds 2 --streams 8
"""

from __future__ import annotations

import argparse
import asyncio
import time

import nats
import psutil
from clusternet_nats.api.apps import Description
from clusternet_nats.api.intake import DELIVERY_HEARTBEAT
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.hub.intake.feed import descriptions_consumer
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import ensure_buckets
from clusternet_nats.store.buckets import MAX_VALUE_BYTES, StoreLayout, ensure_stream, kv_stream_config
from clusternet_nats.store.informer import FETCH_BATCH, FLEET_IDLE_POLL, informer_consumer
from clusternet_nats.store.keys import kv_stream, kv_subject_prefix
from clusternet_nats.store.kv import MAX_PENDING
from clusternet_nats.store.pull import PullReader, PushReader
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.reference import load_average, publish_async_rate
from cpu import cpu_seconds  # bench/cpu.py, beside this

IN_FLIGHT = MAX_PENDING
"""Unacknowledged writes at once, as the deployer's `JsonBucket.write_many`."""


async def fan_out(url: str, server: psutil.Process, args: argparse.Namespace) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_buckets(js)
    descriptions = KindInfo.of(Description).bucket
    buckets = [descriptions] + [f"{descriptions}-{shard}" for shard in range(1, args.streams)]
    for bucket in buckets[1:]:  # made as the Descriptions bucket is (store/buckets.py)
        await ensure_stream(js, kv_stream_config(bucket, StoreLayout(), MAX_VALUE_BYTES, direct=True))
    delivered: set[int] = set()
    everyone = asyncio.Event()

    def nats_cpu() -> float:
        return cpu_seconds({"nats": server})["nats"]

    def bucket_of(cluster: int) -> str:
        return buckets[cluster % len(buckets)]

    def subject(cluster: int) -> str:
        # wildcard: the system's keys (<namespace>.<name>) under a filter <namespace>.>
        return f"{kv_subject_prefix(bucket_of(cluster))}ns{cluster}" + (".desc" if args.filter == "wildcard" else "")

    async def follow(cluster: int, reader: PullReader) -> None:
        await reader.next()  # raises ConsumerGoneError on a gap or a silent consumer
        delivered.add(cluster)
        if len(delivered) == args.clusters:
            everyone.set()

    followers: list[asyncio.Task[None]] = []
    readers: list[PullReader] = []
    started = time.monotonic()
    for cluster in range(args.clusters):
        reader: PullReader
        bucket = bucket_of(cluster)
        stream, prefix = kv_stream(bucket), kv_subject_prefix(bucket)
        if args.consumer == "push":  # the hub's, for an agent (hub/intake/feed.py)
            inbox = f"_BENCH.fanout.{cluster}"
            config = descriptions_consumer(bucket, f"ns{cluster}", inbox, 0)
            reader = PushReader(nc, stream, config.name or "", inbox, DELIVERY_HEARTBEAT)
            await reader.start()
            await barrier(nc)  # a push consumer delivers once its subject has (literal) interest
        else:  # an agent's informer's own (store/informer.py)
            config = informer_consumer(f"fanout-{cluster}", f"{prefix}ns{cluster}.>", 0, FLEET_IDLE_POLL)
            reader = PullReader(nc, stream, config.name or "", FETCH_BATCH, FLEET_IDLE_POLL)
            await reader.start()
        if args.filter == "literal":
            config.filter_subject = subject(cluster)
        await js.add_consumer(stream, config)
        readers.append(reader)
        followers.append(asyncio.create_task(follow(cluster, reader)))
    print(
        f"{args.clusters} {args.consumer} consumers ({args.filter} filters) on {len(buckets)} stream(s) made in"
        f" {time.monotonic() - started:.1f} s"
    )

    payload = b"x" * args.size
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def write(cluster: int) -> None:
        async with slots:
            await js.publish(subject(cluster), payload)

    for round_ in range(1, args.rounds + 1):
        if round_ > 1:  # every consumer now past its first write, as before a fleet's second change
            delivered.clear()
            everyone.clear()
            followers = [asyncio.create_task(follow(cluster, reader)) for cluster, reader in enumerate(readers)]
        cpu0, started = nats_cpu(), time.monotonic()
        await asyncio.gather(*(write(cluster) for cluster in range(args.clusters)))
        writes = time.monotonic() - started
        async with asyncio.timeout(args.timeout):
            await asyncio.wait(
                {asyncio.ensure_future(everyone.wait()), *followers}, return_when=asyncio.FIRST_EXCEPTION
            )
        for follower in followers:
            if follower.done() and follower.exception() is not None:
                raise RuntimeError(f"a consumer failed: {follower.exception()!r}")
        delivered_s, cpu = time.monotonic() - started, nats_cpu() - cpu0
        print(
            f"  round {round_}, {args.clusters} writes: {args.clusters / writes:,.0f}/s over {writes:.2f} s; every"
            f" consumer delivered {delivered_s:.2f} s after the first write; nats-server {cpu:.2f} CPU-s"
            f" (load {load_average()})"
        )
    cpu0 = nats_cpu()
    await asyncio.sleep(args.idle)  # the phase measured: every consumer idle, heartbeating
    print(f"  then {args.idle:.0f} s idle: nats-server {nats_cpu() - cpu0:.2f} CPU-s")
    await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--consumer", choices=("push", "pull"), default="push")
    parser.add_argument("--filter", choices=("wildcard", "literal"), default="wildcard")
    parser.add_argument("--size", type=int, default=2048, help="bytes per write")
    parser.add_argument("--idle", type=float, default=DELIVERY_HEARTBEAT + 5, help="seconds idle measured after")
    parser.add_argument("--rounds", type=int, default=1, help="writes per cluster, each round once all delivered")
    parser.add_argument("--streams", type=int, default=1, help="buckets the clusters are spread over")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for every delivery")
    args = parser.parse_args()
    with NatsServer() as server:
        assert server.proc is not None
        asyncio.run(fan_out(server.url, psutil.Process(server.proc.pid), args))
        reference = asyncio.run(publish_async_rate(server.url))
        print(f"raw reference: nats-py publish_async {reference:,.0f} msgs/s on the same server")


if __name__ == "__main__":
    main()

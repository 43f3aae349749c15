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

    .venv/bin/python bench/fanout.py --clusters 10000
    .venv/bin/python bench/fanout.py --clusters 10000 --consumer pull --filter literal
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import nats
import psutil
from clusternet_nats.api.apps import Description
from clusternet_nats.api.intake import DELIVERY_HEARTBEAT
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.store import ensure_buckets
from clusternet_nats.store.informer import FLEET_IDLE_POLL
from clusternet_nats.store.keys import kv_stream, kv_subject_prefix
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.reference import load_average, publish_async_rate
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

IN_FLIGHT = 1024
"""Unacknowledged writes at once, as the deployer's `JsonBucket.write_many`."""


def cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


async def fan_out(url: str, server: psutil.Process, args: argparse.Namespace) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_buckets(js)
    bucket = KindInfo.of(Description).bucket
    stream, prefix = kv_stream(bucket), kv_subject_prefix(bucket)
    delivered: set[int] = set()
    everyone = asyncio.Event()

    def subject(cluster: int) -> str:
        # wildcard: the system's keys (<namespace>.<name>) under a filter <namespace>.>
        return f"{prefix}ns{cluster}" + (".desc" if args.filter == "wildcard" else "")

    def receiver(cluster: int):  # type: ignore[no-untyped-def]
        async def receive(msg: Msg) -> None:
            if msg.headers and msg.headers.get("Status"):
                return  # a heartbeat, or a pull request's status
            delivered.add(cluster)
            if len(delivered) == args.clusters:
                everyone.set()

        return receive

    started = time.monotonic()
    for cluster in range(args.clusters):
        inbox = f"_BENCH.fanout.{cluster}"
        await nc.subscribe(inbox, cb=receiver(cluster))
        config = ConsumerConfig(
            name=f"fanout-{cluster}",
            filter_subject=f"{prefix}ns{cluster}" + (".>" if args.filter == "wildcard" else ""),
            ack_policy=AckPolicy.NONE,
            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
            mem_storage=True,
        )
        if args.consumer == "push":
            config.deliver_subject, config.idle_heartbeat = inbox, DELIVERY_HEARTBEAT
            await nc.flush()  # a push consumer delivers once its subject has (literal) interest
            await js.add_consumer(stream, config)
        else:
            config.max_ack_pending, config.inactive_threshold = -1, 2 * FLEET_IDLE_POLL + 10.0
            await js.add_consumer(stream, config)
            request = {
                "batch": 512,
                "expires": int(FLEET_IDLE_POLL * 1e9),
                "idle_heartbeat": int(DELIVERY_HEARTBEAT * 1e9),
            }
            await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{config.name}", json.dumps(request).encode(), inbox)
    print(
        f"{args.clusters} {args.consumer} consumers ({args.filter} filters) made in {time.monotonic() - started:.1f} s"
    )

    payload = b"x" * args.size
    cpu0, started = cpu_seconds(server), time.monotonic()
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def write(cluster: int) -> None:
        async with slots:
            await js.publish(subject(cluster), payload)

    await asyncio.gather(*(write(cluster) for cluster in range(args.clusters)))
    writes = time.monotonic() - started
    await asyncio.wait_for(everyone.wait(), timeout=args.timeout)
    delivered_s, cpu = time.monotonic() - started, cpu_seconds(server) - cpu0
    print(
        f"  {args.clusters} writes: {args.clusters / writes:,.0f}/s over {writes:.2f} s; every consumer delivered"
        f" {delivered_s:.2f} s after the first write; nats-server {cpu:.2f} CPU-s (load {load_average()})"
    )
    cpu0 = cpu_seconds(server)
    await asyncio.sleep(args.idle)  # the phase measured: every consumer idle, heartbeating
    print(f"  then {args.idle:.0f} s idle: nats-server {cpu_seconds(server) - cpu0:.2f} CPU-s")
    await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--consumer", choices=("push", "pull"), default="push")
    parser.add_argument("--filter", choices=("wildcard", "literal"), default="wildcard")
    parser.add_argument("--size", type=int, default=2048, help="bytes per write")
    parser.add_argument("--idle", type=float, default=DELIVERY_HEARTBEAT + 5, help="seconds idle measured after")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for every delivery")
    args = parser.parse_args()
    with NatsServer() as server:
        assert server.proc is not None
        asyncio.run(fan_out(server.url, psutil.Process(server.proc.pid), args))
        reference = asyncio.run(publish_async_rate(server.url))
        print(f"raw reference: nats-py publish_async {reference:,.0f} msgs/s on the same server")


if __name__ == "__main__":
    main()

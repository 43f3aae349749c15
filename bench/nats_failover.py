"""Benchmark: how long an R3 bucket pauses when its stream leader's server dies.

A 3-server JetStream cluster (testing.NatsCluster), a KV bucket with 3 replicas; the server
leading its stream is SIGKILLed and the time until a put is accepted again is measured (the
client's reconnect included; puts time out after `--request-timeout`, so a put sent to the dead
leader does not hide the election behind nats-py's default 5 s), then the server is started
again and the cluster settles. Beside
it, measured in the same run: a KV put's round trip on the healthy cluster (raw reference) and
the load average.

    .venv/bin/python bench/nats_failover.py --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from clusternet_nats.runtime.connection import Connection
from clusternet_nats.testing.natsserver import NatsCluster
from nats.js.api import KeyValueConfig
from nats.js.kv import KeyValue


async def put_round_trip(kv: KeyValue, count: int = 200) -> float:
    started = time.monotonic()
    for i in range(count):
        await kv.put("reference", str(i).encode())
    return (time.monotonic() - started) / count


async def one_round(cluster: NatsCluster, timeout: float) -> tuple[float, float]:
    conn = Connection(cluster.url, "bench-failover")
    js = (await conn.connect()).jetstream(timeout=timeout)
    kv = await js.create_key_value(KeyValueConfig(bucket="failover", replicas=3))
    try:
        reference = await put_round_trip(kv)
        info = await js.stream_info("KV_failover")
        assert info.cluster is not None
        leader = next(s for s in cluster.servers if s.server_name == info.cluster.leader)
        leader.kill()
        killed = time.monotonic()
        while True:
            try:
                await kv.put("k", b"after")
                break
            except Exception:
                if time.monotonic() - killed > 120:
                    raise RuntimeError("no put accepted within 120 s of the leader's death") from None
                await asyncio.sleep(0.01)
        paused = time.monotonic() - killed
        leader.start()
        cluster.wait_meta_leader()
        return paused, reference
    finally:
        await js.delete_key_value("failover")
        await conn.close()


async def main(rounds: int, timeout: float) -> None:
    with NatsCluster(size=3) as cluster:
        for i in range(rounds):
            paused, reference = await one_round(cluster, timeout)
            print(
                f"round {i + 1}: stream leader killed -> put accepted after {paused:.2f}s"
                f" (raw reference: healthy R3 put {reference * 1000:.2f} ms; load {os.getloadavg()[0]:.2f})"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--request-timeout", type=float, default=0.25, help="seconds a put may take")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.request_timeout))

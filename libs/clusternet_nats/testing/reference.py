"""The raw references every benchmark prints beside its figures, measured in the same run.

Machines here are shared and noisy, so a figure means something only next to what the bus
itself did at the same moment: nats-py `publish_async` into a JetStream stream on the same
server, and the load average. One definition, so every bench's ratio compares the same thing.
"""

from __future__ import annotations

import os
import time

import nats

REFERENCE_STREAM = "BENCH_REFERENCE"


async def publish_async_rate(url: str, replicas: int = 1, count: int = 5000, size: int = 512) -> float:
    """Messages/s of nats-py `publish_async` into a stream of `replicas`, every ack awaited."""
    nc = await nats.connect(servers=url.split(","))
    js = nc.jetstream(publish_async_max_pending=4000)
    try:
        await js.add_stream(name=REFERENCE_STREAM, subjects=["bench.reference"], num_replicas=replicas)
        payload = b"x" * size
        started = time.monotonic()
        for _ in range(count):
            await js.publish_async("bench.reference", payload)
        await js.publish_async_completed()
        rate = count / (time.monotonic() - started)
        await js.delete_stream(REFERENCE_STREAM)
        return rate
    finally:
        await nc.close()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as `uptime` prints them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())

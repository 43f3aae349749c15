"""Benchmark: what tracing costs a store write, in compare-and-set writes per second.

One nats-server; `--writes` sequential compare-and-set writes through `JsonBucket.write` (the
one write path, each in a `store.write` span carrying `traceparent`), three ways in turn, twice
each, interleaved: without a tracer provider (OpenTelemetry's no-op spans: what a service runs
when no OTEL_* variable asks for export), with the SDK's provider and a batch processor to an
exporter that drops spans (every span recorded and handed off, as with OTLP, minus the network),
and, as the raw reference, the same compare-and-set writes as bare `js.publish` calls with the
same headers. Then the CPU cost alone of what a write adds, `span()` and `inject()` without I/O,
in microseconds, both ways (steadier than round trips on a busy machine). Printed beside them:
nats-py `publish_async` into a stream (testing/reference.py) and the load average before and after.

    .venv/bin/python bench/tracing_overhead.py --writes 3000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence

import nats
from clusternet_nats.store import ensure_buckets
from clusternet_nats.store.kv import CONTENT_TYPE, JSON_CONTENT_TYPE, JsonBucket
from clusternet_nats.store.tracecontext import inject, span, use_provider
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.reference import load_average, publish_async_rate
from nats.js import JetStreamContext
from nats.js.api import Header
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

BUCKET = "descriptions-status"
VALUE = b'{"phase":"Success","reason":null,"manifestStatuses":[]}' * 4


class Dropping(SpanExporter):
    """Takes every batch and keeps nothing: the cost of recording and handing off, not of sending."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@contextlib.contextmanager
def no_provider() -> Iterator[None]:
    yield


@contextlib.contextmanager
def sdk_provider() -> Iterator[None]:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropping()))
    with use_provider(provider):
        yield
    provider.shutdown()


async def timed(writes: int, write: Callable[[str, int], Awaitable[int]]) -> float:
    """Writes per second of `writes` sequential CAS writes to one key."""
    key = f"bench.k{time.monotonic_ns()}"
    revision = 0
    started = time.monotonic()
    for _ in range(writes):
        revision = await write(key, revision)
    return writes / (time.monotonic() - started)


def span_cost(rounds: int = 20000) -> float:
    """Microseconds of one `store.write`-like span with its `inject`, no I/O."""
    attributes = {"cnet.bucket": BUCKET, "cnet.key": "ns.name", "cnet.operation": "put"}
    started = time.perf_counter()
    for _ in range(rounds):
        with span("store.write", attributes=attributes):
            inject({})
    return (time.perf_counter() - started) / rounds * 1e6


async def main(writes: int) -> None:
    server = NatsServer().start()
    try:
        nc = await nats.connect(server.url)
        js: JetStreamContext = nc.jetstream()
        await ensure_buckets(js)
        bucket = JsonBucket(js, BUCKET)

        async def ours(key: str, revision: int) -> int:
            return await bucket.write(key, VALUE, revision)

        async def bare(key: str, revision: int) -> int:
            headers = {Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(revision), CONTENT_TYPE: JSON_CONTENT_TYPE}
            return int((await js.publish(bucket.prefix + key, VALUE, headers=headers)).seq)

        load_before = load_average()
        reference = await publish_async_rate(server.url)
        await timed(writes // 10, ours)  # warm-up: the bucket's first lookups, the connection's buffers
        results: dict[str, list[float]] = {"no provider": [], "SDK provider": [], "bare js.publish": []}
        for _ in range(2):
            with no_provider():
                results["no provider"].append(await timed(writes, ours))
            with sdk_provider():
                results["SDK provider"].append(await timed(writes, ours))
            results["bare js.publish"].append(await timed(writes, bare))
        await nc.close()
        with no_provider():
            cost_noop = span_cost()
        with sdk_provider():
            cost_sdk = span_cost()
    finally:
        server.cleanup()

    print(f"{writes} sequential CAS writes, best of 2 (writes/s):")
    bare_rate = max(results["bare js.publish"])
    for name, rates in results.items():
        print(f"  {name:<16} {max(rates):8.0f}   ({max(rates) / bare_rate:.2f} x bare js.publish)")
    print(f"CPU per write for span + inject: no provider {cost_noop:.1f} us, SDK provider {cost_sdk:.1f} us")
    print(f"raw reference: nats-py publish_async into a stream {reference:.0f} msg/s")
    print(f"load average: before {load_before}, after {load_average()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=3000)
    asyncio.run(main(parser.parse_args().writes))

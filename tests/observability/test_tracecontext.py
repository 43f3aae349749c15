"""The pieces of trace propagation on their own: headers in and out, a work queue carrying a
key's context to its reconcile, parked keys counted until their next change."""

from __future__ import annotations

import asyncio

from clusternet_nats.store.tracecontext import attached, extract, inject, span
from clusternet_nats.store.workqueue import WorkQueue
from clusternet_nats.testing.waiting import eventually
from multidict import CIMultiDict, CIMultiDictProxy
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def trace_id(context: Context) -> str:
    return format(trace.get_current_span(context).get_span_context().trace_id, "032x")


def test_headers_carry_the_context_both_ways(spans: InMemorySpanExporter) -> None:
    assert extract(None) is None and extract({}) is None
    assert extract({"traceparent": "not a traceparent"}) is None
    http = CIMultiDictProxy(CIMultiDict({"Traceparent": TRACEPARENT}))  # as aiohttp hands them over
    carried = extract(http)
    assert carried is not None and trace_id(carried) == "0af7651916cd43dd8448eb211c80319c"
    with attached(carried), span("child"):
        headers = inject({"Content-Type": "application/json"})
    assert headers["traceparent"].split("-")[1] == "0af7651916cd43dd8448eb211c80319c"
    assert headers["Content-Type"] == "application/json"
    (child,) = spans.get_finished_spans()
    assert child.parent is not None and format(child.parent.span_id, "016x") == "b7ad6b7169203331"
    assert inject({}) == {}, "outside any trace nothing is added"


async def test_a_queued_key_is_reconciled_in_the_trace_it_was_added_in(spans: InMemorySpanExporter) -> None:
    seen: list[str] = []

    async def reconcile(key: str) -> None:
        seen.append(format(trace.get_current_span().get_span_context().trace_id, "032x"))

    queue = WorkQueue("traced", reconcile, workers=1)
    queue.start()
    try:
        with attached(extract({"traceparent": TRACEPARENT})):
            queue.add("a")
        queue.add("b")  # added in no trace: its reconcile starts one of its own
        await eventually(lambda: len(seen) == 2, 5, what="both reconciled")
    finally:
        await queue.stop()
    assert seen[0] == "0af7651916cd43dd8448eb211c80319c"
    assert seen[1] != seen[0]
    names = [(s.name, (s.attributes or {}).get("cnet.key")) for s in spans.get_finished_spans()]
    assert names == [("reconcile", "a"), ("reconcile", "b")]


async def test_parked_keys_are_counted_until_their_next_change() -> None:
    failures = 0

    async def failing(key: str) -> None:
        nonlocal failures
        failures += 1
        raise RuntimeError("no")

    parked = asyncio.Event()

    async def on_parked(key: str, err: BaseException) -> None:
        parked.set()

    queue = WorkQueue("parking", failing, workers=1, max_retries=1, base_delay=0.001, on_parked=on_parked)
    queue.start()
    try:
        queue.add("k")
        await asyncio.wait_for(parked.wait(), 5)
        assert queue.parked == 1 and failures == 2
        queue.add("k")  # its next change brings it back
        assert queue.parked == 0
    finally:
        await queue.stop()

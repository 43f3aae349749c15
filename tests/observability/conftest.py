"""The spans this process records, for tests of tracing: the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from clusternet_nats.store.tracecontext import use_provider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span finished while the test runs, whichever service (in this process) made it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_provider(provider):
        yield exporter
    provider.shutdown()

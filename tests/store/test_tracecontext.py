"""Spans cost nothing when nobody traces, yet a carried trace is still passed on."""

import pytest
from clusternet_nats.store.tracecontext import extract, inject, span
from opentelemetry import trace

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def no_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a process without OTEL_* (another test may have set this process's global one)."""
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)


def test_without_a_provider_or_a_carried_trace_no_span_is_made(no_provider: None) -> None:
    with span("reconcile") as current:
        assert current is trace.INVALID_SPAN
        assert inject({}) == {}, "nothing to propagate"


def test_a_carried_trace_is_passed_on_without_a_provider(no_provider: None) -> None:
    parent = extract({"traceparent": TRACEPARENT})
    assert parent is not None
    with span("reconcile", parent=parent):
        headers = inject({})
    assert headers["traceparent"].split("-")[1] == TRACEPARENT.split("-")[1], "the same trace goes on"

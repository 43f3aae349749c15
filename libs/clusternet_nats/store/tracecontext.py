"""W3C trace context carried over NATS, so that one change is one trace through every service.

A change travels as stored records, not as calls: the hub writes a Subscription, the scheduler
sees it in its informer and writes a binding, the deployer sees that and writes Descriptions, an
agent sees its Description and applies it. So the trace context travels with the records: every
write (store/kv.py) carries the writer's `traceparent` in the KV message's headers, an informer
(store/informer.py) hands the context of the message it applied to whoever it notifies, the
work queue (store/workqueue.py) keeps it with the key, and the reconcile of that key runs in a
span whose parent it is. Requests (predictor calls, pushes to a cluster, a registered cluster's
intake) carry it in their headers too. One `cnet apply` is then one trace through every service
and every agent, however many processes and hops it takes.

Spans go to the process's tracer provider (runtime/tracing.py sets it from the OTEL_* variables;
without one they are OpenTelemetry's no-op spans). This lives in the store layer, the lowest
that carries the context (KV writes and informers), so that the store and runtime both use it.

Several services can share a process (tests, the devsystem), so each span also says which one
made it (`cnet.service`), from the service bound to the task that runs it (`bind_service`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import structlog
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind

SERVICE_ATTRIBUTE = "cnet.service"
_TRACER_NAME = "clusternet_nats"
_override: trace.TracerProvider | None = None

AttributeValue = str | int | float | bool
_NO_OP_PROVIDERS = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


@contextlib.contextmanager
def use_provider(provider: trace.TracerProvider) -> Iterator[None]:
    """Spans of this process go to `provider` while inside (a test's in-memory exporter), whatever
    the global provider is (OpenTelemetry lets the global one be set only once per process)."""
    global _override
    previous, _override = _override, provider
    try:
        yield
    finally:
        _override = previous


def export_nothing() -> None:
    """This process exports no spans (a service with no OTEL exporter): its global provider is
    OpenTelemetry's no-op one, set once. Until a provider is set, every look at the global one
    reads `os.environ` for OTEL_PYTHON_TRACER_PROVIDER (a missed key raises inside, some 1 us),
    and `span` looks several times per reconcile: 3-4 % of an agent's CPU in a rollout."""
    trace.set_tracer_provider(trace.NoOpTracerProvider())


def tracer() -> trace.Tracer:
    return (_override or trace.get_tracer_provider()).get_tracer(_TRACER_NAME)


def bind_service(name: str) -> None:
    """Names the service of this task and the tasks it starts, in spans and in log lines."""
    structlog.contextvars.bind_contextvars(service=name)


def current_service() -> str | None:
    service = structlog.contextvars.get_contextvars().get("service")
    return service if isinstance(service, str) else None


@contextlib.contextmanager
def span(
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: otel_context.Context | None = None,
    attributes: Mapping[str, AttributeValue | None] | None = None,
) -> Iterator[Span]:
    """A span, current while inside, child of `parent` (a carried context) or of the current span;
    an exception leaving it is recorded on it. Attributes that are None are left out.

    With no tracer provider and no trace to pass on, OpenTelemetry's no-op span would only cost
    (some 40 us each, a dozen per registration on the hub): the invalid span stands in for it."""
    if (
        _override is None
        and type(trace.get_tracer_provider()) in _NO_OP_PROVIDERS
        and not trace.get_current_span(parent).get_span_context().is_valid
    ):
        yield trace.INVALID_SPAN
        return
    attrs = {key: value for key, value in (attributes or {}).items() if value is not None}
    service = current_service()
    if service is not None:
        attrs[SERVICE_ATTRIBUTE] = service
    with tracer().start_as_current_span(name, context=parent, kind=kind, attributes=attrs) as current:
        yield current


def inject(headers: dict[str, str]) -> dict[str, str]:
    """Adds the current trace context (`traceparent`, `tracestate`) to message headers; returns them."""
    propagate.inject(headers)
    return headers


def extract(headers: Mapping[str, str] | None) -> otel_context.Context | None:
    """The trace context a message (NATS headers) or a request (HTTP headers, looked up without
    regard to case) carries, or None when it carries none."""
    if not headers:
        return None
    carried = propagate.extract(headers)
    return carried if trace.get_current_span(carried).get_span_context().is_valid else None


def carried() -> otel_context.Context | None:
    """The current context if a trace is active in it (what a queued key should carry on)."""
    current = otel_context.get_current()
    return current if trace.get_current_span(current).get_span_context().is_valid else None


@contextlib.contextmanager
def attached(ctx: otel_context.Context | None) -> Iterator[None]:
    """Makes a carried context current while inside (nothing to do for None)."""
    if ctx is None:
        yield
        return
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


def log_ids(_: object, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: `trace_id` and `span_id` of the current span, when there is one."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event.setdefault("trace_id", format(context.trace_id, "032x"))
        event.setdefault("span_id", format(context.span_id, "016x"))
    return event


@contextlib.contextmanager
def request_span(name: str, subject: str) -> Iterator[dict[str, str]]:
    """A CLIENT span around one request; yields the headers that carry it to the answerer."""
    with span(name, kind=SpanKind.CLIENT, attributes={"messaging.destination.name": subject}):
        yield inject({})

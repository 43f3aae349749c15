"""Trace export for a service process, chosen by OpenTelemetry's own OTEL_* variables.

OTLP over HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set
or `OTEL_TRACES_EXPORTER=otlp`; nothing otherwise, or with `OTEL_SDK_DISABLED=true` or
`OTEL_TRACES_EXPORTER=none`. The exporter reads its headers, timeout and certificates from the
`OTEL_EXPORTER_OTLP_*` variables, the sampler comes from `OTEL_TRACES_SAMPLER`, the propagators
from `OTEL_PROPAGATORS` (W3C trace context by default), extra resource attributes from
`OTEL_RESOURCE_ATTRIBUTES`. With no exporter, spans are OpenTelemetry's no-op ones and nothing
is recorded. How the context travels between services is store/tracecontext.py's.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from opentelemetry import trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


class TracingConfigError(ValueError):
    """An OTEL_* variable asks for something this build cannot do."""


def configure_tracing(service: str) -> TracerProvider | None:
    """The process's tracer provider from the OTEL_* variables, or None when nothing is exported.
    The caller shuts it down at exit, which sends the spans still buffered."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "otlp" if endpoint else "none").strip().lower()
    if exporter == "none":
        return None
    if exporter != "otlp":
        raise TracingConfigError(f"OTEL_TRACES_EXPORTER={exporter!r}: this build exports traces with otlp or none")
    # Imported here: the SDK (tens of milliseconds of imports) and the exporter (protobuf,
    # requests) are for a process that exports; `cnet` without one starts without them.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider

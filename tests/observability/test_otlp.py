"""Across real processes: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, `cnet` and every service export
their spans over OTLP/HTTP, and one `cnet apply` is one trace, as a collector receives it: the
command's span, the hub's request for each object, the scheduler's and the deployer's reconciles
and each prod cluster's apply in the agent.

The collector is this test's own HTTP endpoint decoding the protobuf requests with OpenTelemetry's
proto package, as a real collector would; the services are the processes users run (testing/system.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "replication"
SUBSCRIPTION_PATH = "/apis/apps.clusternet.io/v1alpha1/namespaces/default/subscriptions/app-demo"


@dataclass(frozen=True)
class Received:
    service: str
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    attributes: dict[str, str]


class Collector:
    """Receives OTLP/HTTP trace exports at /v1/traces."""

    def __init__(self) -> None:
        self.spans: list[Received] = []

    async def traces(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest.FromString(await request.read())
        for resource_spans in export.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        Received(
                            service=resource.get("service.name", ""),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            attributes={
                                a.key: a.value.string_value or str(a.value.int_value) for a in span.attributes
                            },
                        )
                    )
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")


def _chain(span: Received, trace: list[Received]) -> list[str]:
    """The services of the span's ancestors, nearest first, as far as they were received."""
    by_id = {s.span_id: s for s in trace}
    chain = []
    while span.parent_id in by_id:
        span = by_id[span.parent_id]
        chain.append(span.service)
    return chain


@pytest.fixture
async def collector() -> AsyncIterator[tuple[Collector, str]]:
    received = Collector()
    application = web.Application()
    application.router.add_post("/v1/traces", received.traces)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    try:
        yield received, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        await runner.cleanup()


async def test_one_cnet_apply_is_one_trace_through_every_process(
    collector: tuple[Collector, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    received, endpoint = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")  # export every 0.2 s, not 5 s
    system = System(tmp_path / "system", sim_clusters=3)
    await asyncio.to_thread(system.start, 90)
    try:
        command = [sys.executable, "-m", "clusternet_nats.cli.main", "--config", str(system.cnet_config)]
        result = await asyncio.to_thread(
            subprocess.run, [*command, "apply", "-f", str(EXAMPLE)], capture_output=True, text=True, env=os.environ
        )
        assert result.returncode == 0, result.stderr

        def apply_trace() -> list[Received] | None:
            roots = [s for s in received.spans if s.service == "cnet" and s.name == "cnet apply"]
            if not roots:
                return None
            trace = [s for s in received.spans if s.trace_id == roots[0].trace_id]
            applies = [s for s in trace if s.service == "clusternet-agent" and s.name == "agent.apply"]
            complete = all(_chain(apply, trace)[-1:] == ["cnet"] for apply in applies)  # parents end later
            return trace if len(applies) >= 2 and complete else None  # both prod clusters

        trace = await eventually(apply_trace, 60, what="cnet apply's trace with both clusters' applies")
    finally:
        await asyncio.to_thread(system.stop)

    services = {s.service for s in trace}
    assert {"cnet", "clusternet-hub", "clusternet-scheduler", "clusternet-deployer", "clusternet-agent"} <= services
    puts = {s.attributes.get("url.path") for s in trace if s.service == "clusternet-hub" and s.name.startswith("PUT ")}
    assert SUBSCRIPTION_PATH in puts and len(puts) >= 2, f"every object's PUT is in the one trace: {puts}"
    for apply in (s for s in trace if s.name == "agent.apply"):
        chain = _chain(apply, trace)
        assert chain[-1] == "cnet" and "clusternet-hub" in chain and "clusternet-deployer" in chain, chain

    # Log lines written in the trace's spans carry its id, so a line leads to the trace.
    trace_id = trace[0].trace_id
    for name in ("hub", "scheduler", "deployer", "agent"):
        lines = [json.loads(line) for line in system.services[name].log_path.read_text().splitlines() if line]
        assert any(line.get("trace_id") == trace_id for line in lines), f"{name} logged nothing in the trace"
    hub = [json.loads(line) for line in system.services["hub"].log_path.read_text().splitlines() if line]
    (put,) = [r for r in hub if r.get("event") == "http.request" and r.get("path") == SUBSCRIPTION_PATH
              and r["method"] == "PUT"]
    assert put["trace_id"] == trace_id and len(put["span_id"]) == 16

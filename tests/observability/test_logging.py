"""configure_logging: JSON on every line (libraries' standard-logging records too), the service on
each, and the trace and span ids of the span a line was written in."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging

import pytest
import structlog
from clusternet_nats.runtime.logging import configure_logging
from clusternet_nats.store.tracecontext import bind_service, span, use_provider
from opentelemetry.sdk.trace import TracerProvider


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_json_lines_carry_service_and_trace_ids(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", json=True, service="clusternet-test")
    log = structlog.get_logger("test")
    log.info("outside", cluster="c1")
    with use_provider(TracerProvider()), span("work") as current:
        log.info("inside", subscription="default.app")
        logging.getLogger("nats.aio.client").warning("reconnecting to %s", "nats://x")
    context = current.get_span_context()

    outside, inside, library = lines(capsys)
    assert outside["service"] == "clusternet-test" and outside["cluster"] == "c1"
    assert "trace_id" not in outside
    assert inside["trace_id"] == format(context.trace_id, "032x")
    assert inside["span_id"] == format(context.span_id, "016x")
    assert inside["subscription"] == "default.app" and inside["level"] == "info"
    assert library["event"] == "reconnecting to nats://x" and library["logger"] == "nats.aio.client"
    assert library["service"] == "clusternet-test" and library["level"] == "warning"
    assert library["trace_id"] == inside["trace_id"]


async def test_a_task_bound_service_wins_over_the_process_name(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", json=True, service="clusternet-process")

    async def service_task() -> None:
        bind_service("clusternet-scheduler")
        structlog.get_logger().info("in the scheduler")

    await asyncio.create_task(service_task())
    structlog.get_logger().info("in the process")
    scheduler, process = lines(capsys)
    assert scheduler["service"] == "clusternet-scheduler"
    assert process["service"] == "clusternet-process"


def test_the_console_renderer_is_not_json(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", json=False, service="clusternet-test")
    structlog.get_logger().info("readable", cluster="c1")
    err = capsys.readouterr().err
    assert "readable" in err and "cluster=c1" in err and "service=clusternet-test" in err
    assert not err.lstrip().startswith("{"), err


def test_lines_go_to_the_stderr_of_the_moment(capsys: pytest.CaptureFixture[str]) -> None:
    """A command run in-process (CliRunner) sets logging up on its own stderr, then closes it."""
    swapped = io.StringIO()
    with contextlib.redirect_stderr(swapped):
        configure_logging("info", json=True, service="clusternet-test")
        structlog.get_logger().info("during")
    swapped.close()
    structlog.get_logger().info("after")
    logging.getLogger("nats").warning("library after")
    assert [line["event"] for line in lines(capsys)] == ["after", "library after"]

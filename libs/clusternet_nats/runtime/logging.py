"""structlog set-up: one JSON object per line on stderr, or readable lines on a terminal.

Services bind `cluster`, `subscription`, `key` and the like on their loggers rather than
formatting them into messages, so logs can be filtered by any of them. Every line names its
`service` (bound per task by `store.tracecontext.bind_service`, so services sharing a process
stay apart; otherwise the process's), and, inside a span, its `trace_id` and `span_id`, which
find the line's trace in the tracing backend.

The libraries underneath log through the standard `logging` module (nats-py's reconnects,
aiohttp, kubernetes-asyncio): their records go through the same processors and renderer, so a
JSON log stays JSON on every line. The format is JSON unless stderr is a terminal (or `json`
says otherwise).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from clusternet_nats.store.tracecontext import log_ids


class _Stderr:
    """Whatever `sys.stderr` is when a line is written, not when logging was set up: a command run
    in-process (a test's CliRunner swaps stderr for its own, then closes it) must not leave every
    later line written to a closed stream."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _default_service(service: str) -> structlog.types.Processor:
    def add_service(_: object, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event.setdefault("service", service)
        return event

    return add_service


def process_service() -> str:
    """The service a process is, from how it was started: `python -m clusternet_nats.agent` is
    `clusternet-agent`, as `run` names it; a script (`clusternet-agent`) is its own name."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    parts = (getattr(spec, "name", "") or "").split(".")
    if len(parts) >= 2 and parts[0] == "clusternet_nats":
        return "clusternet-" + (parts[1] if parts[-1] == "__main__" else parts[-1])
    return (sys.argv[0].rsplit("/", 1)[-1] if sys.argv and sys.argv[0] else "") or "clusternet"


def configure_logging(
    level: str = "info", json: bool | None = None, service: str | None = None, final: bool = False
) -> None:
    """Configures structlog and the standard `logging` root alike; `json` None: JSON unless
    stderr is a terminal; `service`: the name on lines no task has bound one for.

    `final`: nothing configures logging again in this process (a service's, once it runs), so
    each module's logger is built on its first use and kept, instead of on every call (2.2 us
    for a call below the level, 0.9 us kept: a simulated cluster's start makes dozens). A test
    process reconfigures (levels, captured logs), so by default loggers are built per call."""
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        _default_service(service or process_service()),
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        log_ids,
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=final,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name, structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(_Stderr())
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(max(numeric, logging.INFO))  # libraries' debug records (asyncio, aiohttp) are noise

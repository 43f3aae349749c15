"""The life of a service process: connect, build, serve health, stop cleanly on SIGTERM.

Every service is the same shape: a set of informers feeding work queues of reconcilers. This
module owns that shape once, so each service is only its reconcilers: it builds them from a
ServiceContext, and the context starts informers, waits for them to list, starts the queues,
reports readiness on `/readyz` and stops everything in order on SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from aiohttp import web
from clusternet_nats.api.meta import KubeObject
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.runtime import eventloop, heap
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.health import serve_health
from clusternet_nats.runtime.logging import configure_logging
from clusternet_nats.runtime.metrics import RECONCILE_DURATION, Metrics
from clusternet_nats.runtime.partitions import Partitions, ReplicaOptions
from clusternet_nats.runtime.tracing import TracingConfigError, configure_tracing
from clusternet_nats.store import EventRecorder, Informer, ObjectStore, StatusStore, WorkQueue, ensure_buckets
from clusternet_nats.store.buckets import StoreLayout
from clusternet_nats.store.cancelling import cancel_and_wait
from clusternet_nats.store.informer import DEFAULT_IDLE_POLL, sharing_equal
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.store.tracecontext import bind_service, export_nothing
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from pydantic import BaseModel

T = TypeVar("T")
K = TypeVar("K", bound=KubeObject)
M = TypeVar("M", bound=BaseModel)
log = structlog.get_logger(__name__)


@dataclass
class CommonOptions:
    """Settings every service takes, from flags or CNET_* environment variables alike."""

    nats_url: str = "nats://127.0.0.1:4222"
    nats_creds: str | None = None
    log_level: str = "info"
    health_host: str = "127.0.0.1"
    health_port: int = 0
    stream_replicas: int = 1
    """Replicas of the JetStream streams and buckets the service creates (not of the service)."""
    jetstream_domain: str | None = None
    """The hub's JetStream domain; needed when connected through a leaf node."""
    ensure_store: bool = True
    """Create missing buckets at start; False where the credentials may not (a registered agent)."""
    replicas: ReplicaOptions | None = None
    """Set for hub-side services: replicas share the keys of every work queue (runtime/partitions.py)."""


class ServiceContext:
    """What a service builds its reconcilers from; owns their informers and queues."""

    def __init__(
        self,
        name: str,
        options: CommonOptions,
        conn: Connection,
        nc: NATS,
        intake: IntakeClient | None = None,
        idle_poll: float = DEFAULT_IDLE_POLL,
    ) -> None:
        self.name = name
        self.idle_poll = idle_poll
        """How long its informers' pull requests linger (store/informer.py: FLEET_IDLE_POLL for an agent's)."""
        self.options = options
        self.conn = conn
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream(domain=options.jetstream_domain)
        self.intake = intake
        """A registered cluster's: its writes and Events go to the hub's intake (store/intake.py)."""
        self.recorder = EventRecorder(self.js, name, intake)
        self.metrics = Metrics()
        self.metrics.sample_value("cnet_nats_connected", lambda: 1.0 if nc.is_connected else 0.0)
        self.informers: list[Informer[object]] = []
        self._shared: dict[tuple[str, str, object], Informer[Any]] = {}
        """Informers by (bucket, key filter, what they decode to): one cache per process."""
        self.queues: list[WorkQueue] = []
        self.background: list[Callable[[], Coroutine[Any, Any, None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._readiness_checks: list[Callable[[], bool]] = []
        self.ready = False
        self.partitions = Partitions(nc, self.js, name, options.replicas) if options.replicas else None
        """Which keys this replica works on; None: all of them (agents, one-replica tests)."""
        if self.partitions is not None:
            partitions = self.partitions
            self.metrics.sample_value("cnet_partitions_owned", lambda: len(partitions.owned))

    def status_store(self, bucket: str, model: type[M]) -> StatusStore[M]:
        """Records of a status bucket, written the way this context may write (see `intake`)."""
        return StatusStore(self.js, bucket, model, self.intake)

    def object_store(self, model: type[K]) -> ObjectStore[K]:
        return ObjectStore(self.js, KindInfo.of(model), self.intake)

    def informer(
        self,
        bucket: str,
        decode: Callable[[str, bytes, int], T],
        key_filter: str = ">",
        shared_as: object = None,
    ) -> Informer[T]:
        """A registered cluster's informers follow through the hub's intake (store/informer.py).

        `shared_as` names what `decode` makes (a model, or a compact view of one): every caller
        asking for the same bucket, filter and `shared_as` gets the same informer, so a process
        holds one copy of each object however many of its controllers follow the bucket. None:
        an informer of its own (a decode nobody else could share)."""
        if shared_as is not None and (found := self._shared.get((bucket, key_filter, shared_as))) is not None:
            return found
        informer: Informer[T] = Informer(
            self.nc, self.js, bucket, decode, key_filter, idle_poll=self.idle_poll, intake=self.intake
        )
        self.informers.append(informer)  # type: ignore[arg-type]
        if shared_as is not None:
            self._shared[(bucket, key_filter, shared_as)] = informer
        self.conn.on_reconnect(informer.resync)
        self.metrics.sample_value("cnet_informer_objects", lambda: len(informer), bucket)
        self.metrics.sample_value("cnet_informer_lag_messages", lambda: informer.lag, bucket)
        self.metrics.sample_value("cnet_informer_last_applied_sequence", lambda: informer.last_sequence, bucket)
        return informer

    def objects(self, model: type[K], key_filter: str = ">") -> Informer[K]:
        """The informer of one kind's objects (with resourceVersion set from the KV revision),
        shared by every caller in this process."""
        store: ObjectStore[K] = ObjectStore(self.js, KindInfo.of(model))
        bucket = store.info.bucket
        return self.informer(bucket, lambda key, data, rv: store.decode(data, rv, key), key_filter, ("objects", model))

    def records(self, bucket: str, model: type[M], key_filter: str = ">") -> Informer[M]:
        """The informer of a status bucket or another bucket of plain records (e.g. bindings),
        shared by every caller in this process; records stored alike are one object."""
        return self.informer(bucket, sharing_equal(model.model_validate_json), key_filter, ("records", model))

    def queue(
        self,
        name: str,
        reconcile: Callable[[str], Awaitable[None]],
        workers: int = 4,
        on_parked: Callable[[str, BaseException], Awaitable[None]] | None = None,
        priority: Callable[[str], int] | None = None,
        base_delay: float = 0.05,
    ) -> WorkQueue:
        async def counted(key: str) -> None:
            started = time.perf_counter()
            try:
                await reconcile(key)
            except Exception:
                RECONCILE_DURATION.labels(name, "error").observe(time.perf_counter() - started)
                raise
            RECONCILE_DURATION.labels(name, "ok").observe(time.perf_counter() - started)

        queue = WorkQueue(
            name, counted, workers=workers, on_parked=on_parked, priority=priority, base_delay=base_delay
        )
        self.queues.append(queue)
        self.metrics.sample_value("cnet_workqueue_depth", lambda: len(queue), name)
        self.metrics.sample_value("cnet_workqueue_parked", lambda: queue.parked, name)
        if self.partitions is not None:
            self.partitions.attach(queue)
        return queue

    def add_readiness_check(self, check: Callable[[], bool]) -> None:
        """Something besides listed informers that `/readyz` must wait for."""
        self._readiness_checks.append(check)

    def is_ready(self) -> bool:
        return (
            self.ready
            and self.nc.is_connected
            and all(i.synced for i in self.informers)
            and all(check() for check in self._readiness_checks)
        )

    def run_forever(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """A background loop (heartbeats, timers) started after the informers have listed."""
        self.background.append(job)

    async def start(self) -> None:
        for informer in self.informers:
            await informer.start()
        for informer in self.informers:
            await informer.wait_synced()
        if self.partitions is not None and self.queues:
            self.conn.on_reconnect(self.partitions.leases.resync)
            await self.partitions.start()
        for queue in self.queues:
            queue.start()
        for job in self.background:
            self._tasks.append(asyncio.create_task(job()))
        self.ready = True

    async def wait_idle(self) -> None:
        for queue in self.queues:
            await queue.wait_idle()

    async def stop(self) -> None:
        self.ready = False
        await cancel_and_wait(self._tasks)
        if self.partitions is not None and self.queues:
            await self.partitions.stop()
        for queue in self.queues:
            await queue.stop()
        for informer in self.informers:
            await informer.stop()
        self.metrics.close()


Builder = Callable[[ServiceContext], Awaitable[None]]


async def _health_app(ctx: ServiceContext) -> web.AppRunner | None:
    if ctx.options.health_port < 0:
        return None
    return await serve_health(ctx.options.health_host, ctx.options.health_port, ctx.nc, ctx.is_ready)


STOP_TIMEOUT = 10.0
"""Seconds each shutdown step may take before the service goes on without it."""


async def bounded(step: Awaitable[None], what: str, service: str, timeout: float = STOP_TIMEOUT) -> None:
    """Awaits one shutdown step for at most `timeout`: a component that hangs on stop (or swallows
    its cancellation) must not keep the process from exiting on SIGTERM; it is logged, and left."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        log.error("service.stop_step_timed_out", service=service, step=what, seconds=timeout)
    elif not task.cancelled() and task.exception() is not None:
        log.error("service.stop_step_failed", service=service, step=what, error=repr(task.exception()))


async def serve(
    name: str, options: CommonOptions, build: Builder, stop: asyncio.Event, stop_timeout: float = STOP_TIMEOUT
) -> None:
    """Runs one service until `stop` is set; each shutdown step is bounded by `stop_timeout`."""
    bind_service(name)  # this task's and every task it starts: their log lines and spans
    conn = Connection(options.nats_url, name, options.nats_creds)
    nc = await conn.connect()
    ctx = ServiceContext(name, options, conn, nc)
    if options.ensure_store:
        await ensure_buckets(ctx.js, StoreLayout(replicas=options.stream_replicas))
    await build(ctx)
    runner = await _health_app(ctx)
    await ctx.start()
    heap.settle()
    trimming = asyncio.create_task(heap.return_freed())
    log.info("service.started", service=name, event_loop=type(asyncio.get_running_loop()).__module__)
    try:
        await stop.wait()
    finally:
        trimming.cancel()
        log.info("service.stopping", service=name)
        await bounded(ctx.stop(), "components", name, stop_timeout)
        if runner is not None:
            await bounded(runner.cleanup(), "health server", name, stop_timeout)
        await bounded(conn.close(), "nats connection", name, stop_timeout)
        log.info("service.stopped", service=name)


def run(name: str, options: CommonOptions, build: Builder) -> None:
    """Process entry point: logging, tracing, signals, serve."""
    configure_logging(options.log_level, service=name, final=True)
    heap.tune()
    try:
        tracing = configure_tracing(name)
    except TracingConfigError as err:
        log.error("service.tracing_misconfigured", service=name, error=str(err))
        raise SystemExit(2) from None
    if tracing is None:
        export_nothing()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve(name, options, build, stop)

    try:
        eventloop.run(main())
    finally:
        if tracing is not None:
            tracing.shutdown()  # sends the spans still buffered

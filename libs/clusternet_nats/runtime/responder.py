"""One request/reply responder, so every service that answers requests follows one policy.

The predictor, the agent's push responder, the registrar, the auth callout and the hub's intake
each give an `Endpoint`: `accept` says whether a message is a request it may answer at all,
`answer` answers it, `failed` shapes an error answer in its own wire contract. The `Responder`
owns the rest, once:

* A message without a reply, or one `accept` refuses (`Unanswerable`), is dropped and logged:
  there is no one to answer, or the asker is not who the subject is for. NATS does not check
  reply subjects (DESIGN §7), so this is where each endpoint's origin check lives (the callout
  answers only the server's signed request, the intake only the asking cluster's own inbox, the
  registrar only the id's registering inbox, the agent only its own `clusternet.reply.<ns>.`).
* Every accepted request gets exactly one answer: the endpoint's, or, when `answer` raises, the
  endpoint's error answer built from a `Failure` that says why: NATS or the store unreachable
  (retryable), or an unexpected error (its type, and its text only where the requester is
  trusted: an untrusted one learns nothing of the hub's internals). Nothing the endpoint raises
  leaves the asker to time out.
* Requests run in a bounded `TaskPool` (at most `concurrency` at once; 1 keeps arrival order),
  in a queue group where one is given, so replicas share the requests.
* Each answer runs in a SERVER span, the child of the trace context the request carries
  (store/tracecontext.py), so a predictor call or a push is part of the asker's trace.

Why not nats.micro (nats-py 2.16 ships it, read in `nats/micro/service.py`): its endpoint runs
the handler inside the subscription's callback, so requests are answered one at a time (no
concurrency bound to configure); its error answer is a `Nats-Service-Error` header over an empty
body, while our contracts carry the error in the body (the callout's answer must be a signed
JWT, which is all nats-server reads); its `Request` hides the reply subject (`_msg` is private)
that our origin checks read, and it answers any exception, one raised by a failed check included,
to whatever reply the message names; and its discovery (`$SRV.PING|INFO|STATS`, `nats micro ls`)
needs every responder to subscribe to `$SRV.>` and answer onto `_INBOX.>`, which a cluster's
grant deliberately lacks. Its queue group and request/error counters are what we keep here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import nats.errors
import structlog
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.runtime.tasks import TaskPool
from clusternet_nats.store.tracecontext import extract, span
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from opentelemetry.trace import SpanKind

R = TypeVar("R")
log = structlog.get_logger(__name__)


class Unanswerable(Exception):
    """Raised by `accept`: not a request this endpoint may answer; the message says why (logged)."""


@dataclass(frozen=True)
class Failure:
    """Why a request could not be answered as asked; what the error answer says."""

    reason: str
    retryable: bool
    """NATS or the store was unreachable: the same request may succeed later."""


class Endpoint(Protocol[R]):
    def accept(self, msg: Msg) -> R:
        """The request this message is, or raises Unanswerable; cheap, no I/O."""
        ...

    async def answer(self, request: R) -> bytes: ...

    def failed(self, request: R, failure: Failure) -> bytes:
        """The error answer, in the endpoint's wire contract, for a request `answer` raised on."""
        ...


@dataclass
class ResponderStats:
    """Counters for tests and logs."""

    received: int = 0
    answered: int = 0
    dropped: int = 0
    """Messages without a reply or refused by `accept`: not answered, on purpose."""
    failed: int = 0
    """Requests whose `answer` raised, answered with an error."""
    reply_failed: int = 0
    """Answers that could not be sent (the connection closing)."""


class Responder(Generic[R]):
    """Serves one endpoint on `subject`; see the module docstring for the policy."""

    def __init__(
        self,
        nc: NATS,
        subject: str,
        endpoint: Endpoint[R],
        *,
        name: str,
        queue: str = "",
        concurrency: int = 1,
        trusted: bool = False,
    ) -> None:
        """`name` is who answers, as error answers name it; `trusted`: whether the requesters may
        read an unexpected error's text (hub-side askers) or only its type (clusters, tokens)."""
        self.nc, self.subject, self.endpoint, self.name = nc, subject, endpoint, name
        self.queue, self.trusted = queue, trusted
        self.stats = ResponderStats()
        self._pool = TaskPool(concurrency)
        self._sub: Subscription | None = None
        self._log = log.bind(responder=name, subject=subject, queue=queue or None)

    @property
    def in_flight(self) -> int:
        return len(self._pool)

    @property
    def peak_in_flight(self) -> int:
        return self._pool.peak

    async def start(self) -> None:
        """Returns once the server has the subscription, so a request sent next finds it."""
        self._sub = await self.nc.subscribe(self.subject, queue=self.queue, cb=self._dispatch)
        await barrier(self.nc)

    async def stop(self) -> None:
        if self._sub is not None and not self.nc.is_closed:
            await self._sub.unsubscribe()
        self._sub = None
        await self._pool.cancel()

    async def serve(self) -> None:
        """Answers until cancelled (for `ServiceContext.run_forever`)."""
        await self.start()
        try:
            await asyncio.Future()
        finally:
            await self.stop()

    async def _dispatch(self, msg: Msg) -> None:
        self.stats.received += 1
        await self._pool.submit(self._respond(msg))

    async def _respond(self, msg: Msg) -> None:
        if not msg.reply:
            self._dropped(msg, "no reply subject")
            return
        try:
            request = self.endpoint.accept(msg)
        except Unanswerable as err:
            self._dropped(msg, str(err))
            return
        except Exception:  # a bug in the check: answering could answer whom we must not
            self._log.exception("responder.accept_failed", request_subject=msg.subject, reply=msg.reply)
            self._dropped(msg, "the check failed")
            return
        attributes = {"cnet.responder": self.name, "messaging.destination.name": msg.subject}
        with span("responder.answer", kind=SpanKind.SERVER, parent=extract(msg.headers), attributes=attributes):
            try:
                data = await self.endpoint.answer(request)
            except Exception as err:
                self.stats.failed += 1
                data = self.endpoint.failed(request, self._failure(err, msg))
        try:
            await msg.respond(data)
        except Exception as err:
            self.stats.reply_failed += 1
            self._log.warning("responder.reply_failed", request_subject=msg.subject, error=repr(err))
            return
        self.stats.answered += 1

    def _dropped(self, msg: Msg, reason: str) -> None:
        self.stats.dropped += 1
        self._log.warning("responder.dropped", request_subject=msg.subject, reply=msg.reply, reason=reason)

    def _failure(self, err: Exception, msg: Msg) -> Failure:
        shown = repr(err) if self.trusted else f"{type(err).__name__}, logged"
        if isinstance(err, nats.errors.Error | TimeoutError):
            self._log.warning("responder.unavailable", request_subject=msg.subject, error=repr(err))
            return Failure(f"{self.name} cannot reach NATS or its store right now ({shown}); retry", True)
        self._log.exception("responder.failed", request_subject=msg.subject)
        return Failure(f"{self.name} failed unexpectedly ({shown})", False)

"""Serves the hub's pushes (Push, or Dual with AppPusher) on this cluster's own proxy subjects.

The hub decides what to deploy and keeps `descriptions-status`; the agent only applies (or, on
`prune`, removes what the hub no longer wants), with the same DescriptionApplier the Pull path uses, and
replies with the outcome. One subscription serves both verbs and handles requests one at a time
in arrival order, so two versions of one Description, or a push and a prune, never interleave.
A request for another cluster's namespace is refused, whatever the subject permissions.

Only the hub may publish on these subjects, but NATS does not check reply subjects: another
cluster could make the server deliver onto them (its own consumer's deliveries, an API answer).
Such a message never carries a reply under this cluster's `clusternet.reply.<namespace>.`
(runtime/tunnel.py, which only hub-side identities may name), so anything else is dropped. The
shared responder (runtime/responder.py) runs the requests one at a time and answers an
unexpected error with its text (the hub is trusted).
"""

from __future__ import annotations

import structlog
from clusternet_nats.agent.applier import DescriptionApplier
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.api.push import APPLY, PRUNE, PruneRequest, PushReply, PushRequest
from clusternet_nats.api.subjects import PROXY
from clusternet_nats.runtime.responder import Failure, Responder, Unanswerable
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.runtime.tunnel import from_hub
from clusternet_nats.store import split_key
from nats.aio.msg import Msg
from pydantic import ValidationError

log = structlog.get_logger(__name__)


class PushResponder:
    def __init__(self, ctx: ServiceContext, identity: ClusterIdentity, applier: DescriptionApplier) -> None:
        self.identity, self.applier = identity, applier
        subject = PROXY.filter(namespace=identity.namespace, name=identity.name)
        self.responder = Responder(ctx.nc, subject, self, name=f"the agent of cluster {identity.name}", trusted=True)
        self._log = log.bind(cluster=identity.name, subject=subject)

    async def serve(self) -> None:
        await self.responder.serve()

    def accept(self, msg: Msg) -> tuple[str, bytes]:
        """(verb, body) of a request the hub asked; anything else is not the hub's to answer."""
        if not from_hub(msg, self.identity.namespace):
            raise Unanswerable("the reply is not under this cluster's reply prefix: not the hub's request")
        return msg.subject.rsplit(".", 1)[-1], msg.data

    async def answer(self, request: tuple[str, bytes]) -> bytes:
        return (await self.handle(*request)).to_json()

    def failed(self, request: tuple[str, bytes], failure: Failure) -> bytes:
        return PushReply(error=failure.reason).to_json()

    async def handle(self, verb: str, data: bytes) -> PushReply:
        if verb == PRUNE:
            return await self._prune(data)
        if verb != APPLY:
            return PushReply(error=f"unknown verb {verb!r}: expected {APPLY} or {PRUNE}")
        try:
            request = PushRequest.model_validate_json(data)
        except ValidationError as err:
            return PushReply(error=f"invalid PushRequest: {err}")
        namespace, _ = split_key(request.key, namespaced=True)
        if namespace != self.identity.namespace:
            return PushReply(error=f"Description {request.key} is not in this cluster's namespace")
        if request.description is None:
            removed = await self.applier.remove(request.key)
            self._log.info("push.removed", description=request.key, objects=len(removed))
            return PushReply()
        status = await self.applier.deploy(request.key, request.description)
        self._log.info("push.applied", description=request.key, phase=status.phase)
        return PushReply(status=status)

    async def _prune(self, data: bytes) -> PushReply:
        try:
            request = PruneRequest.model_validate_json(data)
        except ValidationError as err:
            return PushReply(error=f"invalid PruneRequest: {err}")
        keep, mine = set(request.keep), self.identity.namespace + "."
        for owner in sorted(await self.applier.backend.owners()):
            if owner.startswith(mine) and owner not in keep:
                removed = await self.applier.remove(owner)
                self._log.info("push.pruned", description=owner, objects=len(removed))
        return PushReply()

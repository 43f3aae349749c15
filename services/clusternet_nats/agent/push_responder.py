"""Serves the hub's pushes (Push, or Dual with AppPusher) on this cluster's own proxy subjects.

The hub decides what to deploy and keeps `descriptions-status`; the agent only applies (or, on
`prune`, removes what the hub no longer wants), with the same Applier the Pull path uses, and
replies with the outcome. One subscription serves both verbs and handles requests one at a time
in arrival order, so two versions of one Description, or a push and a prune, never interleave.
A request for another cluster's namespace is refused, whatever the subject permissions.

Only the hub may publish on these subjects, but NATS does not check reply subjects: another
cluster could make the server deliver onto them (its own consumer's deliveries, an API answer).
Such a message never carries a reply under this cluster's `clusternet.reply.<namespace>.`
(runtime/tunnel.py, which only hub-side identities may name), so anything else is dropped.
"""

from __future__ import annotations

import structlog
from clusternet_nats.agent.applier import Applier
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.api.push import APPLY, PRUNE, PruneRequest, PushReply, PushRequest, proxy_subject
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.runtime.tunnel import from_hub
from clusternet_nats.store import split_key
from nats.aio.msg import Msg
from pydantic import ValidationError

log = structlog.get_logger(__name__)


class PushResponder:
    def __init__(self, ctx: ServiceContext, identity: ClusterIdentity, applier: Applier) -> None:
        self.ctx, self.identity, self.applier = ctx, identity, applier
        self.subject = proxy_subject(identity.namespace, identity.name, "*")
        self._log = log.bind(cluster=identity.name, subject=self.subject)

    async def serve(self) -> None:
        sub = await self.ctx.nc.subscribe(self.subject)
        try:
            async for msg in sub.messages:
                await self._respond(msg)
        finally:
            await sub.unsubscribe()

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

    async def _respond(self, msg: Msg) -> None:
        if not from_hub(msg, self.identity.namespace):
            self._log.warning("push.foreign_request", reply=msg.reply)
            return
        try:
            reply = await self.handle(msg.subject.rsplit(".", 1)[-1], msg.data)
        except Exception as err:
            self._log.warning("push.failed", error=repr(err))
            reply = PushReply(error=f"agent failed: {err!r}")
        if msg.reply:
            try:
                await msg.respond(reply.to_json())
            except Exception as err:
                self._log.warning("push.reply_failed", error=repr(err))

"""Deleting a ManagedCluster revokes its cluster's credentials and drops its live connections.

Level-triggered like every controller: an approved credential whose ManagedCluster is gone is
deleted (the callout then refuses the cluster's next connection) and the cluster's current
connections, direct or leaf, are kicked through the system account so nothing outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import structlog
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registration import inbox_prefix
from clusternet_nats.api.subjects import SERVER_KICK, SERVER_PING
from clusternet_nats.hub.registration.records import credential_store
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import Informer
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

log = structlog.get_logger(__name__)
_QUIET = 0.5
_SWEEP = "all"
"""Seconds without another server's answer after which every server has answered."""


class Revoker:
    def __init__(self, ctx: ServiceContext, system_nc: NATS | None) -> None:
        self.system_nc = system_nc
        self.credentials = credential_store(ctx.js)
        self.clusters: Informer[ManagedCluster] = ctx.objects(ManagedCluster)
        queue = ctx.queue("registration-revoker", self.reconcile, workers=1)
        self.clusters.add_handler(lambda _key, obj: queue.add(_SWEEP) if obj is None else None)
        queue.add(_SWEEP)  # after a restart: clusters deleted while we were away

    async def reconcile(self, _: str) -> None:
        """Revokes every approved credential whose ManagedCluster is gone.

        Marked revoked first (the callout refuses it from then on), then its connections are
        kicked, then it is deleted: a sweep interrupted anywhere finishes on the next one.
        """
        for cluster_id, data, revision in await self.credentials.bucket.entries():
            credential = self.credentials.decode(data)
            if not credential.approved or self.clusters.get(f"{credential.namespace}.{credential.name}"):
                continue
            if not credential.revoked:
                revision = await self.credentials.put(
                    cluster_id, credential.model_copy(update={"revoked": True}), revision
                )
            kicked = await self.kick(cluster_id)
            await self.credentials.bucket.delete(cluster_id, revision)
            log.info("registration.revoked", cluster_id=cluster_id, namespace=credential.namespace, kicked=kicked)

    async def kick(self, user: str) -> int:
        """Disconnects every client and leaf connection of cluster `user`; how many.

        Client connections name their user. Leaf connections do not (LEAFZ), so a leaf is known
        by its interest in the cluster's inbox prefix, which no other identity may subscribe to;
        a leaf with no interest at all is dropped when its user JWT expires (`credential_ttl`).
        """
        if self.system_nc is None:
            return 0
        inbox = inbox_prefix(user) + "."
        kicked = 0
        for reply in await self._ask_every_server(SERVER_PING.format(what="CONNZ")):
            for conn in (reply.get("data") or {}).get("connections") or []:
                if user in (conn.get("authorized_user"), conn.get("name_tag")):
                    kicked += await self._kick(reply["server"]["id"], conn["cid"])
        for reply in await self._ask_every_server(SERVER_PING.format(what="LEAFZ")):
            for leaf in (reply.get("data") or {}).get("leafs") or []:
                if any(str(sub).startswith(inbox) for sub in leaf.get("subscriptions_list") or []):
                    kicked += await self._kick(reply["server"]["id"], leaf["id"])
        return kicked

    async def _kick(self, server_id: str, cid: int) -> int:
        assert self.system_nc is not None
        kick = SERVER_KICK.format(server_id=server_id)
        await self.system_nc.request(kick, json.dumps({"cid": cid}).encode(), timeout=2)
        return 1

    async def _ask_every_server(self, subject: str) -> list[dict[str, Any]]:
        """Every server's answer to a system PING request ."""
        assert self.system_nc is not None
        replies: asyncio.Queue[bytes] = asyncio.Queue()

        async def collect(msg: Msg) -> None:
            replies.put_nowait(msg.data)

        inbox = self.system_nc.new_inbox()
        sub = await self.system_nc.subscribe(inbox, cb=collect)
        out: list[dict[str, Any]] = []
        try:
            await self.system_nc.publish(
                subject, json.dumps({"auth": True, "subscriptions": True, "limit": 100_000}).encode(), reply=inbox
            )
            while True:
                try:
                    async with asyncio.timeout(_QUIET):
                        reply = await replies.get()
                except TimeoutError:
                    return out
                out.append(json.loads(reply))
        finally:
            # If the link closed under us, raising here would replace a CancelledError.
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

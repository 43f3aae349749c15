"""The hub side of Push: deploys the Descriptions Clusternet says the hub must, through the tunnel.

For a cluster that is not Pull and reports `appPusher: true` (DeployableByHub, api/push.py), each
Description in its namespace is sent to the agent on the cluster's apply subject, and the reply
becomes `descriptions-status` and an Event, as Clusternet's hub-side deployer does; a deleted
Description is sent as a removal. A cluster that is unreachable fails the request and the work
queue retries. Requests go through `runtime.tunnel`, whose reply subject a cluster behind a leaf
may answer. Whenever a cluster becomes pushable (Ready, and accepting pushes: at start, after
being cut off), it is first told the whole set of Descriptions it should hold (`prune`), which
removes what was deleted while nobody could tell it, and then every Description is pushed again.
The same happens at the first heartbeat after a push found the cluster unreachable, so a short
cut (shorter than the three heartbeats that make a cluster Unknown) heals as well.

Of a cluster's status the pusher keeps what it reads (`Pushability`): whether its agent takes
pushes and whether it is Ready, not the 6 KiB the whole status is decoded (docs/scale.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from clusternet_nats.api.apps import Description, DescriptionPhase, DescriptionStatus
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.meta import Model
from clusternet_nats.api.push import (
    APPLY,
    PRUNE,
    PruneRequest,
    PushReply,
    PushRequest,
    deployable_by_hub,
    proxy_subject,
)
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.deployer.caches import Caches
from clusternet_nats.domain.readiness import is_ready
from clusternet_nats.runtime.metrics import PUSHES
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store import StatusStore, object_key, split_key
from clusternet_nats.store.deploy_events import DeployOutcomes
from clusternet_nats.store.index import Index

PUSH_TIMEOUT = 10.0

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Pushability:
    """What the pusher reads of a cluster's status."""

    app_pusher: bool | None
    ready: bool


def pushability(_key: str, data: bytes, _revision: int) -> Pushability:
    status = ManagedClusterStatus.model_validate_json(data)
    return Pushability(status.app_pusher, is_ready(status))


class PushError(Exception):
    """The agent could not be reached, or could not handle the request, or the deploy failed."""


class Pusher:
    def __init__(self, ctx: ServiceContext, caches: Caches) -> None:
        self.nc, self.caches = ctx.nc, caches
        self.cluster_statuses = ctx.informer(
            KindInfo.of(ManagedCluster).status_bucket or "", pushability, shared_as=pushability
        )
        self.statuses = StatusStore(ctx.js, KindInfo.of(Description).status_bucket or "", DescriptionStatus)
        self.queue = ctx.queue("deployer-push", self.reconcile)
        self.prunes = ctx.queue("deployer-push-prune", self.prune)
        self._cluster_in: dict[str, str] = {}
        """Dedicated namespace -> the key of its ManagedCluster."""
        self._pushable: dict[str, tuple[bool, bool]] = {}
        """By ManagedCluster key: (the hub deploys to it, it is Ready), as its last change said."""
        self.outcomes = DeployOutcomes(ctx.recorder, log.bind(via="push"))
        self._unreachable: set[str] = set()
        """Clusters a push could not reach: their next heartbeat means the link is back."""
        self._descriptions_by_namespace: Index[Description, str] = Index(lambda desc: (desc.metadata.namespace or "",))
        """What a prune keeps, without reading every Description for each cluster that turns pushable."""
        caches.descriptions.add_handler(self._description_changed)
        caches.clusters.add_handler(lambda key, _obj: self._cluster_changed(key))
        self.cluster_statuses.add_handler(lambda key, _status: self._cluster_changed(key))

    def _hub_deploys_to(self, cluster_key: str | None) -> bool:
        """Whether the hub deploys to the cluster (Push, Dual), as `_cluster_changed` last decided:
        the one place that decides it, so a Description and a cluster are never judged apart."""
        return cluster_key is not None and self._pushable.get(cluster_key, (False, False))[0]

    def _target(self, namespace: str) -> ManagedCluster | None:
        """The cluster of `namespace`, if the hub deploys to it."""
        key = self._cluster_in.get(namespace)
        return self.caches.clusters.get(key) if key is not None and self._hub_deploys_to(key) else None

    def _description_changed(self, key: str, desc: Description | None) -> None:
        """Queued only for a cluster the hub deploys to: a Pull fleet's rollout queues nothing
        here (10,000 keys, each dropped by its pass, cost the deployer a second). A cluster that
        turns pushable later is pruned and given all its Descriptions (`_cluster_changed`).
        Told of every Description the deployer writes, as it writes them: so it asks only what
        `_cluster_changed` keeps, not the cluster and its status."""
        self._descriptions_by_namespace.update(key, desc)
        if self._hub_deploys_to(self._cluster_in.get(split_key(key, namespaced=True)[0])):
            self.queue.add(key)

    def _cluster_changed(self, key: str) -> None:
        namespace, _ = split_key(key, namespaced=True)
        cluster = self.caches.clusters.get(key)
        if cluster is None:
            self._cluster_in.pop(namespace, None)
            self._pushable.pop(key, None)
            return
        self._cluster_in[namespace] = key
        status = self.cluster_statuses.get(key)
        state = (
            deployable_by_hub(cluster.spec.sync_mode, status.app_pusher if status else None),
            status is not None and status.ready,
        )
        if self._pushable.get(key) == state and key not in self._unreachable:
            return
        self._pushable[key] = state
        if state == (True, True):
            self._unreachable.discard(key)
            self.prunes.add(key)

    def descriptions_in(self, namespace: str) -> list[str]:
        """The keys of the Descriptions in a cluster's dedicated namespace."""
        return self._descriptions_by_namespace.keys_for(namespace)

    async def prune(self, cluster_key: str) -> None:
        """Tells a cluster everything it should hold, then pushes each of those again.

        What it holds is read again after the prune's round trip: a Description written meanwhile
        may have been applied and reported before the cluster pruned it, so its status is kept
        and it is pushed again, after the prune."""
        cluster = self._target(split_key(cluster_key, namespaced=True)[0])
        if cluster is None:
            return
        await self._push(cluster, PRUNE, PruneRequest(keep=self.descriptions_in(cluster.namespace)))
        reported = set(await self.statuses.bucket.keys(f"{cluster.namespace}.>"))
        keep = self.descriptions_in(cluster.namespace)
        for key in reported.difference(keep):
            await self.statuses.delete(key)  # pruned: a deletion waiting for this cluster may end
            self.outcomes.forget(key)
        for key in keep:
            self.queue.add(key)

    async def reconcile(self, key: str) -> None:
        namespace, _ = split_key(key, namespaced=True)
        cluster = self._target(namespace)
        if cluster is None:
            return
        desc = self.caches.descriptions.get(key)
        reply = await self._push(cluster, APPLY, PushRequest(key=key, description=desc))
        if desc is None:
            if await self.statuses.get(key) is not None:
                await self.statuses.delete(key)
            self.outcomes.forget(key)
            return
        assert reply.status is not None
        await self.statuses.put_if_changed(key, reply.status)
        await self.outcomes.report(key, self.caches.descriptions.revision(key), desc, reply.status)
        if reply.status.phase is DescriptionPhase.FAILURE:
            raise PushError(reply.status.reason)

    async def _push(self, cluster: ManagedCluster, verb: str, request: Model) -> PushReply:
        subject = proxy_subject(cluster.namespace, cluster.name, verb)
        try:
            msg = await request_cluster(self.nc, cluster.namespace, subject, request.to_json(), PUSH_TIMEOUT)
        except Exception as err:
            self._unreachable.add(object_key(cluster.namespace, cluster.name))
            PUSHES.labels("unreachable").inc()
            raise PushError(f"cluster {cluster.namespaced_name()} unreachable on {subject}: {err!r}") from err
        reply = PushReply.model_validate_json(msg.data)
        PUSHES.labels("refused" if reply.error else "answered").inc()
        if reply.error:
            raise PushError(f"cluster {cluster.namespaced_name()}: {reply.error}")
        return reply

"""The predictor service: queue-grouped NATS responders over node inventories and reservations.

It answers three questions (api/predictor.py): how many replicas of each feed every listed
cluster can still take (PREDICT, the scheduler's one batch call per Subscription), how many of
one requirement one cluster can take (PREDICTOR, what the hub's HTTP `POST /replicas/predict`
asks), and which replicas are not placed or not running yet (UNSCHEDULED).

A cluster's room is its node inventory (fit.py) minus its reservations (reservations.py): the
replicas bound to it that this same inventory does not count yet, by the pods per Description the
agent reports with it, so a reservation ends exactly when the inventory takes the replicas over,
never on a status that can run ahead of it. A new inventory revision therefore re-reckons the
reservations of the Subscriptions bound to that cluster. Both are cached: the room left after
reservations per (inventory revision, reservation generation), and each answer per (cluster,
those two, requirement), so scheduling many Subscriptions of the same shape over 1,000 clusters
costs a dictionary lookup per cluster until something changes.
It subscribes only once its informers have listed, so nothing is answered from a cache still
filling; the queue group lets any number of replicas share the requests.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import structlog
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Description, DescriptionStatus, FeedInventory, FeedOrder
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.predictor import (
    AccommodationReply,
    AccommodationRequest,
    ClusterPrediction,
    PredictionFailure,
    PredictReply,
    PredictRequest,
    UnscheduledReplicas,
    UnscheduledReply,
    UnscheduledRequest,
)
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.domain.feeds import feed_selector, object_selectors
from clusternet_nats.domain.nodefit import Demand, RequirementError
from clusternet_nats.predictor.fit import (
    ClusterNodes,
    NodeRoom,
    NoFeasibleNodes,
    cluster_nodes,
    max_acceptable_replicas,
    reserve,
)
from clusternet_nats.predictor.messages import (
    PREDICT_SUBJECT,
    SUBSCRIPTION_SUBJECT,
    UNSCHEDULED_SUBJECT,
    parse_accommodation_subject,
)
from clusternet_nats.predictor.reservations import Landed, Pending, Reservations, binding_positions, pending_replicas
from clusternet_nats.runtime.metrics import PREDICTOR_REQUESTS, count_by
from clusternet_nats.runtime.responder import Failure, Responder
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import BINDINGS_BUCKET, object_key, split_key
from clusternet_nats.store.index import Index
from nats.aio.msg import Msg
from pydantic import BaseModel, ValidationError

QUEUE_GROUP = "clusternet-predictor"
MAX_CACHED_ANSWERS = 200_000
log = structlog.get_logger(__name__)

Owner = tuple[str, str]
"""(Subscription uid, cluster `ns/name`): what a Description is deployed for."""


class PredictionError(LookupError):
    """This cluster cannot be predicted (no inventory, no feasible node); the message says why."""

    def __init__(self, reason: PredictionFailure, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def cluster_store_key(cluster: str) -> str:
    namespace, _, name = cluster.partition("/")
    return object_key(namespace, name)


def ready_replicas(observed: dict[str, object] | None) -> int:
    """Replicas a workload reports landed: ready (availableReplicas where readyReplicas is not
    given); for a Job, its pods active, succeeded or failed (a finished pod holds no room)."""
    observed = observed or {}
    for key in ("readyReplicas", "availableReplicas"):
        found = observed.get(key)
        if isinstance(found, int):
            return found
    active = observed.get("active")
    return finished_replicas(observed) + (active if isinstance(active, int) else 0)


def finished_replicas(observed: dict[str, object] | None) -> int:
    """A Job's pods succeeded or failed: landed, holding no room, and so in no node's `requested`."""
    observed = observed or {}
    return sum(n for key in ("succeeded", "failed") if isinstance(n := observed.get(key), int))


@dataclass(frozen=True, slots=True)
class Reported:
    """One manifest's status as the predictor keeps it: what it names and what landed of it."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    ready: int
    finished: int

    def names(self, feed: Feed) -> bool:
        return feed_selector(feed) in object_selectors(self.api_version, self.kind, self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class Landing:
    """What the predictor keeps of a Description's status (not the observed statuses)."""

    phase: str | None
    manifests: tuple[Reported, ...]


def _interned(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def description_landing(_key: str, data: bytes, _revision: int) -> Landing:
    """A stored Description status as the predictor's informer keeps it."""
    status = DescriptionStatus.model_validate_json(data)
    manifests = tuple(
        Reported(
            sys.intern(m.api_version),
            sys.intern(m.kind),
            _interned(m.namespace),
            sys.intern(m.name),
            ready_replicas(m.observed_status),
            finished_replicas(m.observed_status),
        )
        for m in status.manifest_statuses or ()
    )
    return Landing(str(status.phase) if status.phase is not None else None, manifests)


def counted_pods(nodes: ClusterNodes | None, descriptions: list[str]) -> int | None:
    """The pods the inventory counts in `requested` for these Descriptions; None when it does not
    count pods per Description (then only the status can say what landed)."""
    if nodes is None or nodes.pods_by_description is None:
        return None
    return sum(nodes.pods_by_description.get(key, 0) for key in descriptions)


class _OwnerMeta(BaseModel):
    namespace: str | None = None
    labels: dict[str, str] | None = None


class _Owned(BaseModel):
    """What the predictor reads of a Description: its metadata's owner labels, nothing else (the
    rendered manifests, a Description's bulk, are skipped by the parser, never kept)."""

    metadata: _OwnerMeta


def description_owners(_key: str, data: bytes, _revision: int) -> frozenset[Owner]:
    """The (Subscription uid, cluster) a stored Description is deployed for; empty when its labels
    do not say (a Description of another controller's)."""
    meta = _Owned.model_validate_json(data).metadata
    labels = meta.labels or {}
    uid, cluster = labels.get(known.SUBS_UID), labels.get(known.CLUSTER_NAME)
    return frozenset({(sys.intern(uid), f"{meta.namespace}/{cluster}")}) if uid and cluster else frozenset()


@dataclass
class _Room:
    revision: int
    generation: int
    nodes: Sequence[NodeRoom]


class Predictor:
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self.inventories = ctx.informer(NODE_INVENTORIES_BUCKET, cluster_nodes, shared_as=cluster_nodes)
        self.bindings = ctx.records(BINDINGS_BUCKET, SubscriptionBinding)
        self.feed_inventories = ctx.objects(FeedInventory)
        info = KindInfo.of(Description)
        self.descriptions = ctx.informer(info.bucket, description_owners, shared_as=description_owners)
        status_bucket = info.status_bucket
        assert status_bucket is not None, "Description has a status bucket"
        self.description_statuses = ctx.informer(status_bucket, description_landing, shared_as=description_landing)
        ctx.metrics.sample("cnet_descriptions", self._phases)
        self.reservations = Reservations()
        self._descriptions_by_owner: Index[frozenset[Owner], Owner] = Index(lambda owners: owners)
        self._bindings_by_uid: Index[SubscriptionBinding, str] = Index(lambda b: {b.subscription_uid})
        self._bindings_by_cluster: Index[SubscriptionBinding, str] = Index(lambda b: set(b.binding_clusters))
        self._clusters_by_id: Index[ClusterNodes, str] = Index(lambda nodes: {nodes.cluster_id})
        self._rooms: dict[str, _Room] = {}
        self._keys: dict[str, tuple[str, str]] = {}
        self._answers: dict[tuple[str, int, int, Demand], int | str] = {}
        self._positions: dict[str, tuple[SubscriptionBinding, dict[str, int]]] = {}
        """By Subscription key: its binding (the object cached) and each bound cluster's position."""
        self.bindings.add_handler(self._binding_changed)
        self.feed_inventories.add_handler(lambda key, _finv: self._reserve(key))
        self.descriptions.add_handler(self._description_changed)
        self.description_statuses.add_handler(lambda key, _status: self._description_status_changed(key))
        self.inventories.add_handler(self._inventory_changed)

    # -- keeping reservations ------------------------------------------------------------------

    def _inventory_changed(self, key: str, inventory: ClusterNodes | None) -> None:
        """What the cluster's pods request changed, and with it which bound replicas it counts."""
        self._clusters_by_id.update(key, inventory)
        namespace, name = split_key(key, True)
        cluster = f"{namespace}/{name}"
        if inventory is None:
            self._rooms.pop(cluster, None)
        for sub_key in self._bindings_by_cluster.keys_for(cluster):
            self._reserve(sub_key, cluster)

    def _phases(self) -> dict[tuple[str, ...], float]:
        """Descriptions by phase, for `cnet_descriptions` (the predictor follows them all already)."""
        statuses = (self.description_statuses.get(key) for key, _ in self.descriptions.items())
        return count_by(s.phase if s is not None and s.phase is not None else "None" for s in statuses)

    def _binding_changed(self, key: str, binding: SubscriptionBinding | None) -> None:
        self._positions.pop(key, None)
        self._bindings_by_uid.update(key, binding)
        self._bindings_by_cluster.update(key, binding)
        self._reserve(key)

    def _description_changed(self, key: str, owners: frozenset[Owner] | None) -> None:
        self._owners_changed(self._descriptions_by_owner.update(key, owners))

    def _description_status_changed(self, key: str) -> None:
        self._owners_changed(self._descriptions_by_owner.values_of(key))

    def _owners_changed(self, owners: Iterable[Owner]) -> None:
        """A Description of these owners changed: their Subscriptions re-reckon that cluster only."""
        for uid, cluster in owners:
            for sub_key in self._bindings_by_uid.keys_for(uid):
                self._reserve(sub_key, cluster)

    def _reserve(self, sub_key: str, cluster: str | None = None) -> None:
        """Re-reckons what the Subscription reserves: on one cluster when only that cluster's
        inventory or Descriptions changed (a rollout over N clusters costs N, not N squared)."""
        binding = self.bindings.get(sub_key)
        namespace, name = split_key(sub_key, True)
        subscription = f"{namespace}/{name}"
        landed = self._landed(binding.subscription_uid if binding else "")
        clusters = None if cluster is None else (cluster,)
        positions = None if binding is None or cluster is None else self._positions_in(sub_key, binding)
        finv = self.feed_inventories.get(sub_key)
        pending = pending_replicas(subscription, binding, finv, landed, clusters, positions)
        self.reservations.replace(subscription, pending, clusters)

    def _positions_in(self, sub_key: str, binding: SubscriptionBinding) -> dict[str, int]:
        """The binding's clusters by position, kept while the binding is the one cached."""
        kept = self._positions.get(sub_key)
        if kept is None or kept[0] is not binding:
            kept = self._positions[sub_key] = (binding, binding_positions(binding))
        return kept[1]

    def _landed(self, uid: str) -> Landed:
        """Landed replicas of one Subscription's feeds (reservations.py): what each cluster's node
        inventory counts for its Descriptions, shared among the feeds in order, plus a Job's
        finished pods; the ready status only where the inventory does not count per Description."""
        given: dict[str, int] = {}

        def landed(cluster: str, order: FeedOrder, assigned: int) -> int:
            descriptions = self._descriptions_by_owner.keys_for((uid, cluster))
            reported = [
                manifest
                for desc_key in descriptions
                if (landing := self.description_statuses.get(desc_key)) is not None
                for manifest in landing.manifests
                if manifest.names(order)
            ]
            counted = counted_pods(self.inventories.get(cluster_store_key(cluster)), descriptions)
            if counted is None:
                return sum(m.ready for m in reported)
            taken = min(assigned, max(counted - given.get(cluster, 0), 0))
            given[cluster] = given.get(cluster, 0) + taken
            return taken + sum(m.finished for m in reported)

        return landed

    # -- predicting ----------------------------------------------------------------------------

    def _names(self, cluster: str) -> tuple[str, str]:
        """(inventory key, `ns/name`) of a cluster named `ns/name` or by its cluster id."""
        if "/" in cluster:
            found = self._keys.get(cluster)
            if found is None:
                if len(self._keys) >= MAX_CACHED_ANSWERS:
                    self._keys.clear()
                found = self._keys[cluster] = (cluster_store_key(cluster), cluster)
            return found
        keys = self._clusters_by_id.keys_for(cluster)
        if not keys:
            message = f"no cluster with id {cluster} has reported a node inventory"
            raise PredictionError(PredictionFailure.NOT_FOUND, message)
        namespace, name = split_key(keys[0], True)
        return keys[0], f"{namespace}/{name}"

    def _room(self, cluster: str) -> tuple[_Room, str]:
        key, name = self._names(cluster)
        inventory = self.inventories.get(key)
        if inventory is None:
            raise PredictionError(PredictionFailure.NOT_FOUND, f"managedcluster {name} has reported no node inventory")
        revision, generation = self.inventories.revision(key), self.reservations.generation(name)
        room = self._rooms.get(name)
        if room is None or (room.revision, room.generation) != (revision, generation):
            if inventory.invalid is not None:
                message = f"managedcluster {name}: its node inventory has {inventory.invalid}"
                raise PredictionError(PredictionFailure.INVALID_INVENTORY, message)
            pending = [p for p in self.reservations.of(name) if p.demand is not None]
            # Without reservations the inventory's own nodes serve: a copy only to reserve in.
            nodes = [node.copy() for node in inventory.nodes] if pending else inventory.nodes
            for reserved in pending:
                assert reserved.demand is not None
                reserve(reserved.demand, reserved.replicas, nodes)
            room = self._rooms[name] = _Room(revision, generation, nodes)
        return room, name

    def max_acceptable(self, cluster: str, demand: Demand) -> int:
        """Replicas of `demand` the cluster can still take. Raises PredictionError."""
        return self._fit(*self._room(cluster), demand)

    def _fit(self, room: _Room, name: str, demand: Demand) -> int:
        cache_key = (name, room.revision, room.generation, demand)
        answer = self._answers.get(cache_key)
        if answer is None:
            try:
                answer = max_acceptable_replicas(demand, room.nodes)
            except NoFeasibleNodes as err:
                answer = f"managedcluster {name}: {err}"
            if len(self._answers) >= MAX_CACHED_ANSWERS:
                self._answers.clear()
            self._answers[cache_key] = answer
        if isinstance(answer, str):
            raise PredictionError(PredictionFailure.NO_FEASIBLE_NODES, answer)
        return answer

    def predict(self, request: PredictRequest) -> PredictReply:
        demands: list[Demand | None] = []
        for i, requirements in enumerate(request.feeds):
            try:
                demands.append(None if requirements is None else Demand.of(requirements))
            except RequirementError as err:
                return PredictReply(error=f"invalid predict request: feeds[{i}].{err}")
        reply = PredictReply()
        for cluster in request.clusters:
            try:
                room, name = self._room(cluster)
                figures = [None if d is None else self._fit(room, name, d) for d in demands]
                reply.clusters[cluster] = ClusterPrediction(replicas=figures)
            except PredictionError as err:
                reply.clusters[cluster] = ClusterPrediction(error=str(err), reason=err.reason)
        return reply

    def _reply(self, subject: str, data: bytes) -> AccommodationReply:
        """The answer to one accommodation request (PREDICTOR: the cluster is in the subject)."""
        found = parse_accommodation_subject(subject)
        if found is None:
            return AccommodationReply(error=f"unknown predictor subject {subject!r}")
        cluster = "/".join(found)
        try:
            request = AccommodationRequest.model_validate_json(data)
            demand = Demand.of(request.requirements)
        except ValidationError as err:
            return AccommodationReply(error=f"invalid accommodation request for {cluster}: {err}")
        except RequirementError as err:
            return AccommodationReply(error=f"invalid accommodation request for {cluster}: requirements.{err}")
        try:
            return AccommodationReply(max_acceptable_replicas=self.max_acceptable(cluster, demand))
        except PredictionError as err:
            return AccommodationReply(error=str(err))

    def unscheduled(self, request: UnscheduledRequest) -> UnscheduledReply:
        if request.cluster is not None:
            try:
                _room, name = self._room(request.cluster)
            except PredictionError as err:
                return UnscheduledReply(error=str(err))
            return UnscheduledReply(items=[_item(p) for p in self.reservations.of(name)])
        items = []
        for key, binding in sorted(self.bindings.items()):
            namespace, name = split_key(key, True)
            for feed, count in sorted(binding.unscheduled_replicas.items()):
                if count > 0:
                    items.append(UnscheduledReplicas(subscription=f"{namespace}/{name}", feed=feed, replicas=count))
        return UnscheduledReply(items=items)


def _item(pending: Pending) -> UnscheduledReplicas:
    return UnscheduledReplicas(
        subscription=pending.subscription, feed=pending.feed, replicas=pending.replicas, cluster=pending.cluster
    )


Reply = AccommodationReply | PredictReply | UnscheduledReply


@dataclass(frozen=True)
class _Endpoint:
    """One subject: `handle` parses and answers (raising ValidationError on a malformed body),
    `error` shapes an error answer in that subject's reply model."""

    kind: str
    handle: Callable[[Msg], Reply]
    error: Callable[[str], Reply]

    def accept(self, msg: Msg) -> Msg:
        """Any hub-side caller may ask (only hub-side identities may publish here)."""
        return msg

    async def answer(self, msg: Msg) -> bytes:
        try:
            reply = self.handle(msg)
        except ValidationError as err:
            reply = self.error(f"invalid {self.kind} request: {err}")
        result = "error" if reply.error else "ok"
        PREDICTOR_REQUESTS.labels(self.kind, result).inc()
        log.debug("predictor.answered", request=self.kind, subject=msg.subject, result=result, error=reply.error)
        return reply.to_json()

    def failed(self, msg: Msg, failure: Failure) -> bytes:
        PREDICTOR_REQUESTS.labels(self.kind, "failed").inc()
        return self.error(failure.reason).to_json()


def endpoints(predictor: Predictor) -> dict[str, _Endpoint]:
    """Per subject filter, its endpoint."""

    return {
        SUBSCRIPTION_SUBJECT: _Endpoint(
            "accommodation",
            lambda msg: predictor._reply(msg.subject, msg.data),
            lambda e: AccommodationReply(error=e),
        ),
        PREDICT_SUBJECT: _Endpoint(
            "predict",
            lambda msg: predictor.predict(PredictRequest.model_validate_json(msg.data)),
            lambda e: PredictReply(error=e),
        ),
        UNSCHEDULED_SUBJECT: _Endpoint(
            "unscheduled",
            lambda msg: predictor.unscheduled(UnscheduledRequest.model_validate_json(msg.data or b"{}")),
            lambda e: UnscheduledReply(error=e),
        ),
    }


async def build(ctx: ServiceContext) -> None:
    for subject, endpoint in endpoints(Predictor(ctx)).items():
        responder = Responder(ctx.nc, subject, endpoint, name="the predictor", queue=QUEUE_GROUP, trusted=True)
        ctx.run_forever(responder.serve)

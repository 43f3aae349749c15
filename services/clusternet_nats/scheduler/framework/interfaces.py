"""The scheduler's extension points, as Clusternet's scheduling framework declares them.

A plugin is a small type with a `name` that implements one or more extension points; a
profile (`Framework`) runs them in Clusternet's order: PreFilter, Filter, PostFilter,
PrePredict, Predict, PreScore, Score (weighted, optionally normalised), PreAssign, Assign,
PostAssign, Reserve, Permit, PreBind, Bind, PostBind. A new rule is a new plugin registered by
name (framework/registry.py), never an edit to the loop that runs them.

Cluster keys everywhere are the ManagedCluster's namespaced name `ns/name`. Per-feed lists
follow `finv.spec.feeds` order.

Only Predict and the bind cycle (Reserve..PostBind) are async: they are where I/O happens
(the predictor over NATS, writing the binding); the rest are pure functions of cached state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from clusternet_nats.api.apps import FeedInventory, Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.domain.dividing import FeedReplicas as FeedReplicas  # the arithmetic's types, re-exported
from clusternet_nats.domain.dividing import TargetClusters as TargetClusters

MAX_SCORE = 100
"""What a score plugin gives its best cluster (Clusternet's MaxClusterScore)."""

@dataclass(frozen=True)
class Status:
    """A plugin's verdict: success, or the reasons it cannot go on (Unschedulable), or `skip`
    (an Assign/Bind plugin that does not handle this Subscription)."""

    reasons: tuple[str, ...] = ()
    plugin: str = ""
    skip: bool = False

    @property
    def is_success(self) -> bool:
        return not self.reasons and not self.skip

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @classmethod
    def unschedulable(cls, plugin: str, reason: str) -> Status:
        return cls((reason,), plugin)

    @classmethod
    def skipped(cls, plugin: str) -> Status:
        return cls((), plugin, skip=True)


SUCCESS = Status()


@dataclass(frozen=True)
class BoundSubscription:
    """Another Subscription and its current binding, as the preemption rule sees it."""

    key: str
    sub: Subscription
    binding: SubscriptionBinding | None
    finv: FeedInventory | None = None


class Handle(Protocol):
    """What plugins may read of the scheduler's caches beyond the Subscription being placed.

    The reconciler provides it when it builds its profiles; `EMPTY_HANDLE` is the default."""

    def bound_subscriptions(self) -> Iterable[BoundSubscription]: ...


class _EmptyHandle:
    def bound_subscriptions(self) -> Iterable[BoundSubscription]:
        return ()


EMPTY_HANDLE: Handle = _EmptyHandle()


@dataclass
class CycleState:
    """What one scheduling cycle has learnt so far, shared by the plugins of that cycle."""

    sub: Subscription
    finv: FeedInventory | None
    current: SubscriptionBinding | None
    handle: Handle = EMPTY_HANDLE
    candidates: list[ManagedCluster] = field(default_factory=list)
    """Every cluster considered (not deleting), sorted by key."""
    feasible: list[ManagedCluster] = field(default_factory=list)
    rejected: dict[str, Status] = field(default_factory=dict)
    """Why each rejected cluster (by key) was rejected."""
    predictions: dict[str, FeedReplicas] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)
    unscheduled: dict[str, int] = field(default_factory=dict)
    """Per feed key, replicas no cluster could take."""
    preempted: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    """Plugin-private values, keyed by plugin name."""
    _by_key: dict[str, ManagedCluster] = field(default_factory=dict, repr=False)

    def current_target(self) -> TargetClusters:
        """The current binding as a placement to merge into (empty when there is none)."""
        if self.current is None:
            return TargetClusters()
        replicas = {key: list(values) for key, values in self.current.replicas.items()}
        return TargetClusters(list(self.current.binding_clusters), replicas)

    def cluster(self, key: str) -> ManagedCluster | None:
        if len(self._by_key) != len(self.candidates):
            self._by_key = {c.namespaced_name(): c for c in self.candidates}
        return self._by_key.get(key)


@runtime_checkable
class Plugin(Protocol):
    @property
    def name(self) -> str: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Runs once before filtering; a failure rejects every cluster with its reason."""

    def pre_filter(self, state: CycleState) -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Rules a cluster out for a Subscription; a cluster every filter passes is feasible."""

    def filter(self, sub: Subscription, cluster: ManagedCluster) -> Status: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Runs when a cycle cannot place everything (no feasible cluster, or unscheduled
    replicas after Assign). It may make room (e.g. by preempting lower-priority
    Subscriptions: it adds their keys to `state.preempted` and the freed replicas to
    `state.predictions`); success means the framework assigns once more."""

    def post_filter(self, state: CycleState) -> Status: ...


@runtime_checkable
class PrePredictPlugin(Plugin, Protocol):
    def pre_predict(self, state: CycleState) -> Status: ...


@runtime_checkable
class PredictPlugin(Plugin, Protocol):
    """How many replicas of each feed every feasible cluster can still take, in one batch call.

    A cluster missing from the answer could not be predicted: dynamic dividing treats it as
    unschedulable and says so."""

    async def predict(
        self, sub: Subscription, finv: FeedInventory, clusters: Sequence[ManagedCluster]
    ) -> dict[str, FeedReplicas]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Ranks feasible clusters: 0..MAX_SCORE per cluster key, higher is better."""

    def score(self, sub: Subscription, clusters: Sequence[ManagedCluster]) -> dict[str, int]: ...


@runtime_checkable
class ScoreNormalizer(Plugin, Protocol):
    """A score plugin's ScoreExtensions: rescales its raw scores to 0..MAX_SCORE."""

    def normalize_score(self, sub: Subscription, scores: dict[str, int]) -> dict[str, int]: ...


@runtime_checkable
class PreAssignPlugin(Plugin, Protocol):
    def pre_assign(self, state: CycleState, selected: TargetClusters) -> Status: ...


@runtime_checkable
class AssignPlugin(Plugin, Protocol):
    """Divides replicas over the selected clusters. Returns Status.skipped when this plugin does
    not handle the Subscription (the next one is tried), else the placement and success, or a
    failure. Replicas it could not place go into `state.unscheduled`."""

    def assign(self, state: CycleState, selected: TargetClusters) -> tuple[TargetClusters, Status]: ...


@runtime_checkable
class PostAssignPlugin(Plugin, Protocol):
    def post_assign(self, state: CycleState, target: TargetClusters) -> Status: ...


class Binder(Protocol):
    """Writes a binding (the reconciler's store); True when it changed what was stored."""

    async def write_binding(self, sub: Subscription, binding: SubscriptionBinding) -> bool: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    async def reserve(self, sub: Subscription, binding: SubscriptionBinding) -> Status: ...

    async def unreserve(self, sub: Subscription, binding: SubscriptionBinding) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    async def permit(self, sub: Subscription, binding: SubscriptionBinding) -> Status: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, sub: Subscription, binding: SubscriptionBinding) -> Status: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Writes the binding through `binder`, or returns Status.skipped to leave it to the next."""

    async def bind(self, sub: Subscription, binding: SubscriptionBinding, binder: Binder) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    async def post_bind(self, sub: Subscription, binding: SubscriptionBinding) -> None: ...

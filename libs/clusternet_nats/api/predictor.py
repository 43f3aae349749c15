"""The predictor's wire contract: how many replicas of a requirement each cluster can still take.

Two forms. Clusternet's HTTP predictor API (pkg/apis/scheduler/interface.go), which the hub
serves: `POST /replicas/predict` with header `Cluster-ID` and a `ReplicaRequirements` body,
answered by `PredictorResults` (`{"replicas": {"default": N}}`); `GET /replicas/unscheduled`.
And ours over NATS request/reply (api/subjects.py PREDICT, UNSCHEDULED, PREDICTOR), in a queue
group: `PredictRequest` asks for every feed of a FeedInventory on every listed cluster at once,
so scheduling one Subscription over 1,000 clusters is one round trip, not 1,000.
"""

from __future__ import annotations

from enum import StrEnum

from clusternet_nats.api.apps import ReplicaRequirements
from clusternet_nats.api.meta import Model, NonNegInt32
from clusternet_nats.api.schemas import register_message
from pydantic import Field

DEFAULT_ACCEPTABLE_REPLICAS_KEY = "default"
"""Clusternet's DefaultAcceptableReplicasKey: the one key its aggregator fills."""
CLUSTER_ID_HEADER = "Cluster-ID"
ROOT_PATH_REPLICAS = "/replicas"
SUB_PATH_PREDICT = "/predict"
SUB_PATH_UNSCHEDULED = "/unscheduled"


class PredictorResults(Model):
    """Clusternet's answer for one cluster and one requirement."""

    replicas: dict[str, NonNegInt32] | None = None


class PredictRequest(Model):
    clusters: list[str]
    """ManagedClusters by namespaced name `ns/name`."""
    feeds: list[ReplicaRequirements | None]
    """Per feed of the FeedInventory, one replica's requirements; None: a feed without replicas
    (answered None: no limit known)."""


class PredictionFailure(StrEnum):
    NOT_FOUND = "NotFound"
    """The cluster has reported no node inventory (or no cluster has that id)."""
    NO_FEASIBLE_NODES = "NoFeasibleNodes"
    """No node passes the nodeSelector, required affinity and taints (Clusternet's error)."""
    INVALID_INVENTORY = "InvalidInventory"


class ClusterPrediction(Model):
    replicas: list[NonNegInt32 | None] | None = None
    """Per feed, the replicas the cluster can still take; absent when `error` says why not."""
    error: str | None = None
    reason: PredictionFailure | None = None


class PredictReply(Model):
    clusters: dict[str, ClusterPrediction] = Field(default_factory=dict)
    error: str | None = None
    """The whole request failed (malformed); per-cluster failures are in `clusters`."""


class AccommodationRequest(Model):
    """One cluster (named by the subject) and one requirement: the HTTP API's question."""

    requirements: ReplicaRequirements
    replicas: NonNegInt32 | None = None
    """The replicas the caller wants placed; the reply says how many could be, whatever this is."""


class AccommodationReply(Model):
    max_acceptable_replicas: int | None = None
    error: str | None = None


class UnscheduledRequest(Model):
    cluster: str | None = None
    """`ns/name` of a cluster: its bound replicas not running yet; None: replicas no cluster had room for."""


class UnscheduledReplicas(Model):
    subscription: str
    """`ns/name` of the Subscription."""
    feed: str
    """The feed's key, as `status.replicas` keys it."""
    replicas: NonNegInt32
    cluster: str | None = None
    """Bound to this cluster but not running there yet; None: no cluster had room for them."""


class UnscheduledReply(Model):
    items: list[UnscheduledReplicas] = Field(default_factory=list)
    error: str | None = None


for _message in (
    PredictRequest,
    PredictReply,
    AccommodationRequest,
    AccommodationReply,
    UnscheduledRequest,
    UnscheduledReply,
):
    register_message(_message, "scheduling.clusternet-nats.io", "v1")
register_message(PredictorResults, "scheduling.clusternet.io", "v1alpha1")

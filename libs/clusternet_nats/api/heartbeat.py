"""A cluster's liveness between status changes, as Kubernetes' node Lease beside the node status.

The agent writes its ManagedClusterStatus only when its content changes; in between, every
`--cluster-status-update-frequency` it publishes a `ClusterHeartbeat` on its own subject
(`HEARTBEAT`, core NATS: nothing stored, so a steady fleet writes nothing). The hub's
cluster-health controller keeps the last one per cluster in memory. When the stored status is not
the one the agent last wrote (the hub marked the cluster Unknown while it was cut off), the hub
answers on `HEARTBEAT_ANSWER` and the agent writes its status again.
"""

from __future__ import annotations

from clusternet_nats.api.meta import ClusterID, Model
from clusternet_nats.api.schemas import register_message
from clusternet_nats.api.subjects import HEARTBEAT, HEARTBEAT_ANSWER
from pydantic import Field, StrictInt

MAX_HEARTBEAT_BYTES = 1024
"""Larger payloads are dropped unread: a heartbeat is a few dozen bytes."""


class ClusterHeartbeat(Model):
    cluster_id: ClusterID
    """Must be the id in the subject (which NATS permissions bind to the sender) and the
    ManagedCluster's spec.clusterId."""
    name: str = Field(min_length=1, max_length=253)
    """The ManagedCluster's name, in the subject's namespace."""
    status_revision: StrictInt = Field(default=0, ge=0)
    """The revision of the status this agent last wrote (0: none yet)."""


class HeartbeatAnswer(Model):
    status_revision: StrictInt = Field(ge=0)
    """The revision the hub holds (0: none): not the agent's, so it must write its status again."""


def heartbeat_subject(namespace: str, cluster_id: str) -> str:
    return HEARTBEAT.format(namespace=namespace, cluster_id=cluster_id)


def answer_subject(cluster_id: str) -> str:
    return HEARTBEAT_ANSWER.format(cluster_id=cluster_id)


register_message(ClusterHeartbeat, "clusters.clusternet.io", "v1beta1")
register_message(HeartbeatAnswer, "clusters.clusternet.io", "v1beta1")

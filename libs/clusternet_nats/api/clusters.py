"""clusters.clusternet.io/v1beta1: how child clusters join (ClusterRegistrationRequest) and how
the hub sees them afterwards (ManagedCluster: identity, taints, health and capacity).

Shapes mirror Clusternet's CRDs so an agent speaking Clusternet's API, or a human reading
`kubectl get mcls -o yaml`, sees the same objects here.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from clusternet_nats.api.meta import (
    B64Bytes,
    ClusterID,
    ClusterName,
    Condition,
    Int32,
    Int64,
    KubeObject,
    Model,
    Quantity,
    Taint,
)
from pydantic import Field, StrictBool, StrictFloat

CLUSTERS_GROUP = "clusters.clusternet.io"
CLUSTERS_VERSION = "v1beta1"


class ClustersObject(KubeObject):
    GROUP = CLUSTERS_GROUP
    VERSION = CLUSTERS_VERSION


class ClusterSyncMode(StrEnum):
    """Who moves resources: the hub pushes (Push), the agent pulls (Pull), or both (Dual)."""

    PUSH = "Push"
    PULL = "Pull"
    DUAL = "Dual"


# ---------------------------------------------------------------------------------------------
# ManagedCluster


class ManagedClusterSpec(Model):
    cluster_id: ClusterID
    sync_mode: ClusterSyncMode
    cluster_type: str | None = None
    taints: list[Taint] | None = None
    cluster_init_base_name: str | None = Field(default=None, max_length=512)


class NodeStatistics(Model):
    ready_nodes: Int32 | None = None
    not_ready_nodes: Int32 | None = None
    unknown_nodes: Int32 | None = None
    lost_nodes: Int32 | None = None


class PodStatistics(Model):
    running_pods: Int32 | None = None
    total_pods: Int32 | None = None


class ResourceUsage(Model):
    cpu_usage: Quantity | None = None
    memory_usage: Quantity | None = None


class ManagedClusterStatus(Model):
    last_observed_time: datetime | None = None
    k8s_version: str | None = Field(default=None, alias="k8sVersion")
    agent_version: str | None = None
    platform: str | None = None
    apiserver_url: str | None = Field(default=None, alias="apiserverURL")
    healthz: StrictBool | None = None
    livez: StrictBool | None = None
    readyz: StrictBool | None = None
    app_pusher: StrictBool | None = None
    use_socket: StrictBool | None = None
    allocatable: dict[str, Quantity] | None = None
    capacity: dict[str, Quantity] | None = None
    resource_usage: ResourceUsage | None = None
    cluster_cidr: str | None = Field(default=None, alias="clusterCIDR")
    service_cidr: str | None = Field(default=None, alias="serviceCIDR")
    node_statistics: NodeStatistics | None = None
    pod_statistics: PodStatistics | None = None
    conditions: list[Condition] | None = None
    heartbeat_frequency_seconds: Int64 | None = None
    kube_qps: StrictFloat | None = Field(default=None, alias="kubeQPS")
    kube_burst: Int32 | None = None
    predictor_enabled: StrictBool | None = None
    predictor_address: str | None = None
    predictor_direct_access: StrictBool | None = None


class ManagedCluster(ClustersObject):
    """A registered child cluster, living in its dedicated namespace on the hub."""

    KIND = "ManagedCluster"
    PLURAL = "managedclusters"
    SHORT_NAMES = ("mcls",)
    HAS_STATUS = True

    spec: ManagedClusterSpec
    status: ManagedClusterStatus = Field(default_factory=ManagedClusterStatus)


# ---------------------------------------------------------------------------------------------
# ClusterRegistrationRequest


class ClusterRegistrationRequestSpec(Model):
    cluster_id: ClusterID
    cluster_name: ClusterName | None = None
    cluster_namespace: str | None = Field(
        default=None, max_length=63, pattern=r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
    )
    cluster_type: str | None = None
    sync_mode: ClusterSyncMode = ClusterSyncMode.PULL
    cluster_labels: dict[str, str] | None = None


class ClusterRegistrationRequestStatus(Model):
    result: str | None = None
    """Approved, Denied or Failed once the hub has decided."""
    error_message: str | None = None
    dedicated_namespace: str | None = None
    managed_cluster_name: str | None = None
    token: B64Bytes | None = None
    ca_certificate: B64Bytes | None = Field(default=None, alias="caCertificate")


class ClusterRegistrationRequest(ClustersObject):
    """A child cluster asking to join; approval creates its namespace and ManagedCluster."""

    KIND = "ClusterRegistrationRequest"
    PLURAL = "clusterregistrationrequests"
    SHORT_NAMES = ("clsrr",)
    NAMESPACED = False
    HAS_STATUS = True

    spec: ClusterRegistrationRequestSpec
    status: ClusterRegistrationRequestStatus = Field(default_factory=ClusterRegistrationRequestStatus)


CLUSTERS_KINDS: tuple[type[KubeObject], ...] = (ManagedCluster, ClusterRegistrationRequest)

__all__ = [
    "CLUSTERS_GROUP",
    "CLUSTERS_KINDS",
    "CLUSTERS_VERSION",
    "ClusterRegistrationRequest",
    "ClusterRegistrationRequestSpec",
    "ClusterRegistrationRequestStatus",
    "ClusterSyncMode",
    "ManagedCluster",
    "ManagedClusterSpec",
    "ManagedClusterStatus",
    "NodeStatistics",
    "PodStatistics",
    "ResourceUsage",
]

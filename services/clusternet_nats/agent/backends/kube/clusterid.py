"""The cluster's id, taken from the cluster as Clusternet's agent takes it.

Clusternet uses the UID of its agent's leader-election Lease, `clusternet-system/clusternet-agent`
(or the `legacy-cluster-id` annotation on it, left by a migration from older agents). A UID is
minted by the API server and lives as long as the object, so every agent of this cluster, and
every restart, reads the same id, and a cluster that Clusternet's agent registered keeps its id.
We hold no election yet, so the Lease is created when absent.
"""

from __future__ import annotations

from typing import Any

from clusternet_nats.agent.backends.kube.ownership import AGENT_NAMESPACE
from clusternet_nats.kube.rest import KubeApi, KubeError

LEASE_NAME = "clusternet-agent"
LEGACY_ID_ANNOTATION = "legacy-cluster-id"
_LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{AGENT_NAMESPACE}/leases"


def id_from_lease(lease: dict[str, Any]) -> str:
    meta = lease["metadata"]
    return str((meta.get("annotations") or {}).get(LEGACY_ID_ANNOTATION) or meta["uid"])


async def cluster_id(api: KubeApi) -> str:
    """Reads (creating if absent) the Lease; the agent's namespace must exist."""
    lease = await api.get(f"{_LEASES}/{LEASE_NAME}")
    if lease is None:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": LEASE_NAME}}
        try:
            lease = await api.request("POST", _LEASES, body=body)
        except KubeError as race:
            if not race.conflict:
                raise
            lease = await api.request("GET", f"{_LEASES}/{LEASE_NAME}")
    return id_from_lease(lease)

"""Writing a cluster's status as its agent would, for tests that have no agent.

The hub writes into the same record (its ClusterInit condition, the health controller's
Unknown), so a test cannot simply create it: like the agent's heartbeat, this keeps the
conditions others set, adds its own, and retries a compare-and-set that lost a race.
"""

from __future__ import annotations

from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.meta import set_condition
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.store.errors import ConflictError
from nats.js import JetStreamContext

ATTEMPTS = 20


async def report_cluster_status(js: JetStreamContext, namespace: str, name: str, status: ManagedClusterStatus) -> int:
    """Stores `status` for the cluster, keeping conditions of other types; returns the revision."""
    store = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
    key = object_key(namespace, name)
    for _ in range(ATTEMPTS):
        current = await store.get(key)
        merged = status.model_copy(deep=True)
        conditions = list(current.value.conditions or []) if current else []
        for condition in status.conditions or []:
            conditions = set_condition(conditions, condition)
        merged.conditions = conditions or None
        try:
            return await store.put(key, merged, current.revision if current else 0)
        except ConflictError:
            continue
    raise ConflictError("managedclusters-status", key, f"{ATTEMPTS} writes in a row lost a race")

"""What a cluster may write, one small rule per bucket: its key, its body, its bounds.

A rule turns a cluster's request into the bytes the hub stores, or raises Refused. Bodies are
parsed with the record's pydantic model, which forbids unknown fields, and stored as they came
once they parse: what is stored is exactly what every reader will parse (a heartbeat is the
hottest write, so it is not serialised a second time). Keys are bounded by what the hub created: one
ManagedCluster, status and node inventory per cluster, one status per Description the hub wrote
for it; so a cluster cannot grow the store beyond a bound fixed by the hub, whatever it sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar

from clusternet_nats.api.apps import Description, DescriptionStatus
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.events import Event
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.api.labels import NODE_LABEL_PREFIX
from clusternet_nats.api.registry import by_kind
from clusternet_nats.hub.registration.records import ClusterCredential
from clusternet_nats.store import ConflictError, JsonBucket, ObjectStore, object_key
from nats.js import JetStreamContext
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class Refused(Exception):
    """A write the intake will not make; `code` as HTTP would say it."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def parse(model: type[M], data: bytes, what: str) -> M:
    try:
        return model.model_validate_json(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise Refused(400, f"{what} is invalid: {where}: {first['msg']}") from None


class Rule(Protocol):
    bucket: ClassVar[str]
    deletable: ClassVar[bool]

    async def admit(self, cluster: ClusterCredential, key: str, data: bytes, revision: int) -> bytes: ...


def own_cluster_key(cluster: ClusterCredential, key: str, what: str) -> None:
    """The one key a cluster has in a per-cluster bucket: `<namespace>.<ManagedCluster name>`."""
    if key != object_key(cluster.namespace, cluster.name):
        raise Refused(403, f"{what}: cluster {cluster.name} may write only its own key")


@dataclass
class DescriptionStatusRule:
    """A status only for a Description the hub wrote in the cluster's namespace."""

    descriptions: JsonBucket
    bucket: ClassVar[str] = by_kind(Description.KIND).status_bucket or ""
    deletable: ClassVar[bool] = True

    async def admit(self, cluster: ClusterCredential, key: str, data: bytes, revision: int) -> bytes:
        if await self.descriptions.get(key) is None:
            raise Refused(404, f"Description {key} does not exist; only its status can be written")
        parse(DescriptionStatus, data, f"status of Description {key}")
        return data


@dataclass
class ClusterStatusRule:
    bucket: ClassVar[str] = by_kind(ManagedCluster.KIND).status_bucket or ""
    deletable: ClassVar[bool] = False

    async def admit(self, cluster: ClusterCredential, key: str, data: bytes, revision: int) -> bytes:
        own_cluster_key(cluster, key, "ManagedCluster status")
        parse(ManagedClusterStatus, data, f"status of ManagedCluster {key}")
        return data


@dataclass
class NodeInventoryRule:
    bucket: ClassVar[str] = NODE_INVENTORIES_BUCKET
    deletable: ClassVar[bool] = False

    async def admit(self, cluster: ClusterCredential, key: str, data: bytes, revision: int) -> bytes:
        own_cluster_key(cluster, key, "node inventory")
        inventory = parse(NodeInventory, data, f"node inventory {key}")
        if inventory.cluster_id != cluster.cluster_id:
            raise Refused(403, f"node inventory {key}: clusterId is not this cluster's")
        return data


@dataclass
class ManagedClusterRule:
    """A cluster keeps its aggregated node labels in step and changes nothing else: labels
    decide which Subscriptions reach it, so a cluster setting its own would be an escalation."""

    clusters: ObjectStore[ManagedCluster]
    label_prefixes: tuple[str, ...] = (NODE_LABEL_PREFIX,)
    bucket: ClassVar[str] = by_kind(ManagedCluster.KIND).bucket
    deletable: ClassVar[bool] = False

    async def admit(self, cluster: ClusterCredential, key: str, data: bytes, revision: int) -> bytes:
        own_cluster_key(cluster, key, "ManagedCluster")
        desired = parse(ManagedCluster, data, f"ManagedCluster {key}")
        stored = await self.clusters.bucket.get(key)
        if stored is None:
            raise Refused(404, f"ManagedCluster {key} does not exist; the hub creates it at registration")
        if stored[1] != revision:
            # A change is judged against the version it was made on: on an older one, what the
            # cluster did not change (a label the hub added since) would look changed.
            raise ConflictError(self.bucket, key, f"revision {revision} is not the latest", stored)
        current = self.clusters.decode(*stored, key)
        if desired.spec != current.spec:
            raise Refused(403, f"ManagedCluster {key}: a cluster may not change its spec")
        keys = desired.labels.keys() | current.labels.keys()
        changed = {k for k in keys if desired.labels.get(k) != current.labels.get(k)}
        forbidden = sorted(k for k in changed if not k.startswith(self.label_prefixes))
        if forbidden:
            raise Refused(403, f"ManagedCluster {key}: a cluster may not change labels {forbidden}")
        updated = current.model_copy(deep=True)
        updated.metadata.labels = dict(desired.labels)
        return self.clusters.encode(updated)


@dataclass
class EventRule:
    """Events about the cluster's own Descriptions and ManagedCluster only, so their number is
    bounded by the stream's per-object limit times what the hub created."""

    descriptions: JsonBucket
    max_message: int

    async def admit(self, cluster: ClusterCredential, data: bytes) -> Event:
        event = parse(Event, data, "Event")
        involved = event.involved_object
        if involved.namespace != cluster.namespace:
            raise Refused(403, "Event: a cluster may record Events only in its own namespace")
        if involved.kind == ManagedCluster.KIND:
            if involved.name != cluster.name:
                raise Refused(403, "Event: about another ManagedCluster")
        elif involved.kind == Description.KIND:
            if await self.descriptions.get(object_key(involved.namespace, involved.name or "-")) is None:
                raise Refused(404, f"Event: Description {involved.namespace}/{involved.name} does not exist")
        else:
            raise Refused(403, f"Event: a cluster may not record Events about {involved.kind}")
        event.metadata.namespace = cluster.namespace
        event.message = event.message[: self.max_message]
        return event


def rules(js: JetStreamContext, descriptions: JsonBucket, label_prefixes: tuple[str, ...]) -> dict[str, Rule]:
    """The rule of each bucket a cluster may write; `descriptions` is the hub's Descriptions bucket."""
    clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind(ManagedCluster.KIND))
    made: list[Rule] = [
        DescriptionStatusRule(descriptions),
        ClusterStatusRule(),
        NodeInventoryRule(),
        ManagedClusterRule(clusters, label_prefixes),
    ]
    return {rule.bucket: rule for rule in made}

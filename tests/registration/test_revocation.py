"""Deleting a ManagedCluster revokes its credentials and drops the cluster's live connection."""

from __future__ import annotations

import nats.errors
import pytest
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registration import APPROVED
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.waiting import eventually

from tests.registration.harness import Client, RegistrationHub, new_cluster_id, register


async def test_deleted_cluster_is_dropped_and_refused(hub: RegistrationHub) -> None:
    cluster_id = new_cluster_id()
    reply, secret = await register(hub.secure.server.url, cluster_id, await hub.token())
    assert reply.result == APPROVED and reply.dedicated_namespace and reply.managed_cluster_name
    nc = await Client().connect(hub.secure.server.url, cluster_id, secret)
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    assert await clusters.delete(reply.dedicated_namespace, reply.managed_cluster_name)
    await eventually(lambda: nc.is_closed, timeout=10, what="the cluster's connection kicked")
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await Client().connect(hub.secure.server.url, cluster_id, secret)

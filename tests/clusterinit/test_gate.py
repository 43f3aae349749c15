"""The ClusterInit gate on a real nats-server: the registrar creates clusters tainted only when it
is on, and with it off the hub's controller reports ClusterInitDisabled and lifts an init taint
left from when it was on (Clusternet's lifecycle controller does both)."""

from __future__ import annotations

import uuid

import pytest
from clusternet_nats.api.clusters import (
    ClusterRegistrationRequest,
    ClusterRegistrationRequestSpec,
    ManagedCluster,
    ManagedClusterSpec,
    ManagedClusterStatus,
)
from clusternet_nats.api.meta import ConditionStatus
from clusternet_nats.api.registration import RegistrationReply, RegistrationRequest, credential_hash, new_secret
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain import clusterinit as init
from clusternet_nats.domain.readiness import ready_condition
from clusternet_nats.hub import __main__ as hub_cli
from clusternet_nats.hub.clusterinit import ClusterInitController
from clusternet_nats.hub.clusterinit.controller import _same
from clusternet_nats.hub.registration.records import ensure_registration_buckets
from clusternet_nats.hub.registration.registrar import Registrar
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from typer.testing import CliRunner


async def registered(nc: NATS, js: JetStreamContext, gate: bool) -> RegistrationReply:
    """A new cluster registered by the hub's registrar, with the ClusterInit gate on or off."""
    await ensure_registration_buckets(js)
    cluster_id = str(uuid.uuid4())
    spec = ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name=f"c-{cluster_id[:8]}")
    request = ClusterRegistrationRequest.new(f"req-{cluster_id[:8]}", spec=spec)
    wire = RegistrationRequest(request=request, credential_hash=credential_hash(new_secret()))
    return await Registrar(nc, js, cluster_init=gate).register(wire)


@pytest.mark.parametrize("gate", [True, False])
async def test_the_registrar_taints_a_new_cluster_only_with_the_gate_on(
    nc: NATS, js: JetStreamContext, gate: bool
) -> None:
    reply = await registered(nc, js, gate)
    assert reply.result == "Approved"
    assert reply.dedicated_namespace is not None and reply.managed_cluster_name is not None
    clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind(ManagedCluster.KIND))
    cluster = await clusters.require(reply.dedicated_namespace, reply.managed_cluster_name)
    assert cluster.spec.taints == ([init.waiting_taint()] if gate else None)


async def test_with_the_gate_off_an_init_taint_is_lifted_and_the_condition_says_disabled(
    nats_server: NatsServer, js: JetStreamContext, unique_ns: str
) -> None:
    clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind(ManagedCluster.KIND))
    spec = ManagedClusterSpec(cluster_id=str(uuid.uuid4()), sync_mode="Pull", taints=[init.waiting_taint()])
    created = await clusters.create(ManagedCluster.new("left-tainted", unique_ns, spec=spec))
    status_bucket = by_kind(ManagedCluster.KIND).status_bucket
    assert status_bucket is not None
    statuses = StatusStore(js, status_bucket, ManagedClusterStatus)
    key = clusters.key_of(created)

    async def build(ctx: ServiceContext) -> None:
        ClusterInitController(ctx, enabled=False)

    async with running_service("clusternet-hub", build, nats_server.url):

        async def lifted() -> ManagedCluster | None:
            cluster = await clusters.require(unique_ns, "left-tainted")
            return cluster if not cluster.spec.taints else None

        cluster = await eventually(lifted, 20, what="the init taint lifted with the gate off")
        assert cluster is not None and cluster.spec.cluster_init_base_name is None

        async def disabled() -> bool:
            current = await statuses.get(key)
            cond = init.init_condition_of(current.value if current else None)
            return cond is not None and (cond.status, cond.reason, cond.message) == (
                ConditionStatus.TRUE,
                "ClusterInitDisabled",
                "feature gate ClusterInit is not enabled",
            )

        await eventually(disabled, 20, what="ClusterInit=True, ClusterInitDisabled")


def test_the_hub_refuses_an_unknown_or_malformed_feature_gate_naming_it() -> None:
    runner = CliRunner(env={"COLUMNS": "200"})  # the error box unwrapped
    unknown = runner.invoke(hub_cli.app, ["--feature-gates", "ClusterInt=true"])
    assert unknown.exit_code == 2
    assert "unrecognized feature gate 'ClusterInt'" in unknown.output
    malformed = runner.invoke(hub_cli.app, ["--feature-gates", "ClusterInit"])
    assert malformed.exit_code == 2
    assert "'ClusterInit' needs =true or =false" in malformed.output


async def test_a_status_write_that_leaves_the_init_condition_alone_costs_no_reconcile(
    nats_server: NatsServer, js: JetStreamContext, unique_ns: str
) -> None:
    """Every heartbeat rewrites a cluster's status; with 10,000 clusters reconciling each (a deep
    copy of the cluster and a compare) was steady work for nothing (issue 15, item 3)."""
    clusters: ObjectStore[ManagedCluster] = ObjectStore(js, by_kind(ManagedCluster.KIND))
    spec = ManagedClusterSpec(cluster_id=str(uuid.uuid4()), sync_mode="Pull")
    created = await clusters.create(ManagedCluster.new("beating", unique_ns, spec=spec))
    status_bucket = by_kind(ManagedCluster.KIND).status_bucket
    assert status_bucket is not None
    statuses = StatusStore(js, status_bucket, ManagedClusterStatus)
    key = clusters.key_of(created)
    reconciled: list[str] = []

    class Counting(ClusterInitController):
        async def reconcile(self, key: str) -> None:
            reconciled.append(key)
            await super().reconcile(key)

    async def build(ctx: ServiceContext) -> None:
        Counting(ctx, enabled=False)

    async with running_service("clusternet-hub", build, nats_server.url):

        async def condition_written() -> bool:
            current = await statuses.get(key)
            return init.init_condition_of(current.value if current else None) is not None

        await eventually(condition_written, 20, what="the ClusterInitDisabled condition written")
        await eventually(lambda: reconciled.count(key) >= 2, 20, what="the condition's echo reconciled")
        before = reconciled.count(key)
        for beat in range(3):
            current = await statuses.get(key)
            assert current is not None
            status = current.value.model_copy(update={"k8s_version": f"v1.30.{beat}"})
            await statuses.put(key, status, current.revision)
            await holds(lambda: reconciled.count(key) == before, 0.5, what=f"no reconcile for heartbeat {beat}")
        # A change that does concern the controller is still seen.
        current = await statuses.get(key)
        assert current is not None
        await statuses.put(key, current.value.model_copy(update={"conditions": []}), current.revision)
        await eventually(lambda: reconciled.count(key) > before, 20, what="the removed condition reconciled")
        await eventually(condition_written, 20, what="the removed condition written again")


async def test_the_init_condition_of_a_new_cluster_is_written_beside_a_report_it_has_not_seen(
    js: JetStreamContext, nats_server: NatsServer, unique_ns: str
) -> None:
    """A new cluster's status is created unread (in a registration storm nearly every status is
    new); when its agent's first report was written first, the create is refused with that
    report, and the condition is added beside it, not over it."""
    status_bucket = by_kind(ManagedCluster.KIND).status_bucket
    assert status_bucket is not None
    statuses = StatusStore(js, status_bucket, ManagedClusterStatus)
    key = f"{unique_ns}.fresh"
    report = ManagedClusterStatus(k8s_version="v1.30.0", healthz=True)
    report.conditions = [ready_condition(report)]
    spec = ManagedClusterSpec(cluster_id=str(uuid.uuid4()), sync_mode="Pull")
    cluster = ManagedCluster.new("fresh", unique_ns, spec=spec)
    merged: list[ManagedClusterStatus] = []

    async def build(ctx: ServiceContext) -> None:
        controller = ClusterInitController(ctx, enabled=False)
        # Before its informers start: the controller knows of no status for the key.
        await statuses.put(key, report, 0)
        await controller._write_condition(key, init.init_condition(False, cluster, init.Progress(None)))
        stored = await statuses.get(key)
        assert stored is not None
        merged.append(stored.value)

    async with running_service("clusternet-hub", build, nats_server.url):
        pass
    (status,) = merged
    assert status.k8s_version == "v1.30.0"
    assert {c.type for c in status.conditions or []} == {"Ready", init.CONDITION}


@pytest.mark.parametrize("gate", [True, False])
async def test_the_registrar_creates_a_new_clusters_status_with_the_condition_the_controller_keeps(
    nats_server: NatsServer, nc: NATS, js: JetStreamContext, gate: bool
) -> None:
    """The registrar writes a new cluster's first status with the ClusterInit condition and
    answers with it: the agent's first report builds on it, and the controller, finding the
    condition it would write, writes nothing (each new cluster's first report was refused once
    by the controller's write)."""
    reply = await registered(nc, js, gate)
    assert reply.managed_cluster is not None and reply.managed_cluster_status is not None
    status_bucket = by_kind(ManagedCluster.KIND).status_bucket
    assert status_bucket is not None
    statuses = StatusStore(js, status_bucket, ManagedClusterStatus)
    key = f"{reply.managed_cluster.namespace}.{reply.managed_cluster.name}"
    first = await statuses.get(key)
    assert first is not None and first.revision == reply.managed_cluster_status_revision
    assert first.value == reply.managed_cluster_status
    wanted = init.init_condition(gate, reply.managed_cluster, init.Progress(None))
    assert _same(init.init_condition_of(first.value), wanted)
    reconciled: list[str] = []

    class Counting(ClusterInitController):
        async def reconcile(self, key: str) -> None:
            await super().reconcile(key)
            reconciled.append(key)

    async def build(ctx: ServiceContext) -> None:
        Counting(ctx, enabled=gate)

    async with running_service("clusternet-hub", build, nats_server.url):
        await eventually(lambda: key in reconciled, 20, what="the new cluster reconciled")
    assert await statuses.get(key) == first, "the controller wrote the condition again"


async def test_a_create_refused_by_a_status_with_the_same_condition_writes_nothing(
    js: JetStreamContext, nats_server: NatsServer, unique_ns: str
) -> None:
    """The controller saw the cluster before the registrar's status reached it: its unread
    create is refused, and the refusal shows the condition already there."""
    status_bucket = by_kind(ManagedCluster.KIND).status_bucket
    assert status_bucket is not None
    statuses = StatusStore(js, status_bucket, ManagedClusterStatus)
    key = f"{unique_ns}.raced"
    spec = ManagedClusterSpec(cluster_id=str(uuid.uuid4()), sync_mode="Pull")
    condition = init.init_condition(False, ManagedCluster.new("raced", unique_ns, spec=spec), init.Progress(None))
    revision = await statuses.put(key, ManagedClusterStatus(conditions=[condition]), 0)

    async def build(ctx: ServiceContext) -> None:
        await ClusterInitController(ctx, enabled=False)._write_condition(key, condition)

    async with running_service("clusternet-hub", build, nats_server.url):
        pass
    stored = await statuses.get(key)
    assert stored is not None and stored.revision == revision

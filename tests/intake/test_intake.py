"""The hub's intake: what a registered cluster may write, checked on a real secured hub.

Each test writes as cluster A through its own credential (its grant allows the intake, not the
streams) and checks both the answer and what the hub's store holds afterwards.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import nats.errors
import pytest
from clusternet_nats.api.apps import DescriptionPhase, DescriptionStatus
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.events import Event, ObjectReference
from clusternet_nats.api.intake import BUCKET_HEADER, KEY_HEADER, REVISION_HEADER, IntakeReply
from clusternet_nats.api.registration import APPROVED, intake_subject
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.ratelimit import RateLimiter
from clusternet_nats.store import AlreadyExistsError, ConflictError, JsonBucket, ObjectStore, StatusStore, Versioned
from clusternet_nats.store.errors import IntakeRefusedError, NotFoundError
from clusternet_nats.store.events import list_events
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.registration.harness import Client, RegistrationHub, hub, new_cluster_id, register

__all__ = ["hub"]


@dataclass
class Registered:
    namespace: str
    name: str
    nc: NATS
    intake: IntakeClient
    secret: str

    def statuses(self) -> StatusStore[DescriptionStatus]:
        return StatusStore(self.nc.jetstream(), "descriptions-status", DescriptionStatus, self.intake)


async def join(hub: RegistrationHub) -> Registered:
    cluster_id = new_cluster_id()
    reply, secret = await register(hub.secure.server.url, cluster_id, await hub.token())
    assert reply.result == APPROVED and reply.dedicated_namespace and reply.managed_cluster_name
    nc = await Client().connect(hub.secure.server.url, cluster_id, secret)
    return Registered(
        reply.dedicated_namespace,
        reply.managed_cluster_name,
        nc,
        IntakeClient(nc, cluster_id, reply.dedicated_namespace),
        secret,
    )


@pytest.fixture
async def pair(hub: RegistrationHub) -> AsyncIterator[tuple[Registered, Registered]]:
    a, b = await join(hub), await join(hub)
    descriptions = JsonBucket(hub.nc.jetstream(), "descriptions")
    for cluster in (a, b):
        await descriptions.create(f"{cluster.namespace}.app", b'{"for": "test"}')
    yield a, b
    for cluster in (a, b):
        await cluster.nc.close()


def status(phase: DescriptionPhase = DescriptionPhase.SUCCESS) -> DescriptionStatus:
    return DescriptionStatus(phase=phase)


async def stored(hub: RegistrationHub, bucket: str, key: str) -> bytes | None:
    found = await JsonBucket(hub.nc.jetstream(), bucket).get(key)
    return None if found is None else found[0]


async def test_status_of_own_description_is_stored_with_compare_and_set(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, _ = pair
    key = f"{a.namespace}.app"
    revision = await a.statuses().put(key, status(), 0)
    assert revision > 0
    assert json.loads(await stored(hub, "descriptions-status", key) or b"{}") == {"phase": "Success"}
    # A lost write is told what it lost to, so the cluster need not ask again.
    with pytest.raises(AlreadyExistsError) as exists:
        await a.statuses().put(key, status(DescriptionPhase.FAILURE), 0)
    assert await a.statuses().lost_to(key, exists.value) == Versioned(status(), revision)
    with pytest.raises(ConflictError) as stale:
        await a.statuses().put(key, status(DescriptionPhase.FAILURE), revision + 1000)
    assert stale.value.current == (await stored(hub, "descriptions-status", key), revision)
    assert await a.statuses().put(key, status(DescriptionPhase.FAILURE), revision) > revision
    # Read back through the cluster's own direct get.
    found = await a.statuses().get(key)
    assert found is not None and found.value.phase is DescriptionPhase.FAILURE


async def test_status_needs_a_description_the_hub_wrote(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, _ = pair
    with pytest.raises(NotFoundError):
        await a.statuses().put(f"{a.namespace}.invented", status(), 0)
    assert await stored(hub, "descriptions-status", f"{a.namespace}.invented") is None


async def test_another_namespace_and_unknown_buckets_are_refused(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, b = pair
    with pytest.raises(IntakeRefusedError) as refused:
        await a.intake.put("descriptions-status", f"{b.namespace}.app", b'{"phase":"Success"}', 0)
    assert refused.value.code == 403 and b.namespace not in str(refused.value).replace(f"{b.namespace}.app", "")
    for bucket in ("descriptions", "subscriptions", "clustercredentials", "bootstraptokens", "bindings"):
        with pytest.raises(IntakeRefusedError) as refused:
            await a.intake.put(bucket, f"{a.namespace}.app", b"{}", 0)
        assert refused.value.code == 403
    assert await stored(hub, "descriptions-status", f"{b.namespace}.app") is None
    assert await stored(hub, "descriptions", f"{a.namespace}.app") == b'{"for": "test"}'


async def test_invalid_and_oversized_bodies_are_refused_naming_the_field(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, _ = pair
    key = f"{a.namespace}.app"
    with pytest.raises(IntakeRefusedError) as refused:
        await a.intake.put("descriptions-status", key, b'{"phase": "Exploded"}', 0)
    assert refused.value.code == 400 and "phase" in str(refused.value)
    with pytest.raises(IntakeRefusedError) as refused:
        await a.intake.put("descriptions-status", key, b'{"phase": "Success", "extra": 1}', 0)
    assert refused.value.code == 400 and "extra" in str(refused.value)
    with pytest.raises(IntakeRefusedError) as refused:
        await a.intake.put("descriptions-status", key, b"\xff\xfe not json", 0)
    assert refused.value.code == 400
    padded = b'{"phase": "Success", "reason": "' + b"x" * (1024 * 1024) + b'"}'
    with pytest.raises(IntakeRefusedError) as refused:
        await a.intake.put("descriptions-status", key, padded, 0)
    assert refused.value.code == 413
    assert await stored(hub, "descriptions-status", key) is None


async def test_cluster_may_change_only_its_aggregated_node_labels(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, b = pair
    info = by_kind(ManagedCluster.KIND)
    mine: ObjectStore[ManagedCluster] = ObjectStore(a.nc.jetstream(), info, a.intake)
    current = await mine.get(a.namespace, a.name)
    assert current is not None
    labelled = current.model_copy(deep=True)
    labelled.metadata.labels = {**current.labels, "node.clusternet.io/zone": "z1"}
    updated = await mine.update(labelled, current)
    assert updated.labels["node.clusternet.io/zone"] == "z1"

    escalated = updated.model_copy(deep=True)
    escalated.metadata.labels = {**updated.labels, "env": "prod"}
    with pytest.raises(IntakeRefusedError) as refused:
        await mine.update(escalated, updated)
    assert refused.value.code == 403 and "env" in str(refused.value)
    respec = updated.model_copy(deep=True)
    respec.spec.cluster_id = new_cluster_id()
    with pytest.raises(IntakeRefusedError):
        await mine.update(respec, updated)

    hub_view = await ObjectStore[ManagedCluster](hub.nc.jetstream(), info).get(a.namespace, a.name)
    assert hub_view is not None and "env" not in hub_view.labels
    assert hub_view.spec.cluster_id == current.spec.cluster_id

    # Labelled by an administrator since the cluster read it: the cluster's change, made on the
    # older version, is a conflict carrying the newer one, not a refusal of a label it never touched.
    admin = hub_view.model_copy(deep=True)
    admin.metadata.labels = {**hub_view.labels, "team": "edge-ops"}
    await ObjectStore[ManagedCluster](hub.nc.jetstream(), info).update(admin)
    rezoned = updated.model_copy(deep=True)
    rezoned.metadata.labels = {**updated.labels, "node.clusternet.io/zone": "z2"}
    with pytest.raises(ConflictError) as stale:
        await mine.update(rezoned, updated)
    assert stale.value.current is not None and b'"team":"edge-ops"' in stale.value.current[0]
    newer = mine.decode(*stale.value.current)
    rezoned = newer.model_copy(deep=True)
    rezoned.metadata.labels = {**newer.labels, "node.clusternet.io/zone": "z2"}
    assert (await mine.update(rezoned, newer)).labels["team"] == "edge-ops"
    other = await ObjectStore[ManagedCluster](hub.nc.jetstream(), info).get(b.namespace, b.name)
    assert other is not None
    with pytest.raises(IntakeRefusedError) as refused:
        await a.intake.put(
            info.bucket, f"{b.namespace}.{b.name}", ObjectStore.encode(other), int(other.metadata.resource_version or 0)
        )
    assert refused.value.code == 403


async def test_events_only_about_own_objects(hub: RegistrationHub, pair: tuple[Registered, Registered]) -> None:
    a, b = pair

    def about(namespace: str, kind: str = "Description", name: str = "app") -> bytes:
        ref = ObjectReference(api_version="apps.clusternet.io/v1alpha1", kind=kind, namespace=namespace, name=name)
        return Event.about(ref, "Normal", "SuccessfullyDeployed", "ok", "clusternet-agent").to_json()

    await a.intake.event(about(a.namespace))
    for forged in (about(b.namespace), about(a.namespace, "Subscription"), about(a.namespace, name="invented")):
        with pytest.raises(IntakeRefusedError):
            await a.intake.event(forged)
    events = await list_events(hub.nc.jetstream(), "Description", a.namespace, "app")
    assert [e.reason for e in events] == ["SuccessfullyDeployed"]
    assert await list_events(hub.nc.jetstream(), "Description", b.namespace, "app") == []


async def test_a_flooding_cluster_is_slowed_and_another_is_not(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, b = pair
    headers = {BUCKET_HEADER: "nowhere", KEY_HEADER: f"{a.namespace}.x", REVISION_HEADER: "0"}

    async def ask() -> IntakeReply:
        msg = await a.nc.request(intake_subject(a.namespace, "put"), b"{}", timeout=10, headers=headers)
        return IntakeReply.model_validate_json(msg.data)

    codes: list[int | None] = []
    for _ in range(3):  # more than the burst in three waves
        codes += [r.code for r in await asyncio.gather(*(ask() for _ in range(500)))]
    assert 429 in codes and 403 in codes
    assert await b.statuses().put(f"{b.namespace}.app", status(), 0) > 0


async def test_a_message_not_asked_from_the_clusters_own_inbox_is_ignored(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, _ = pair
    key = f"{a.namespace}.app"
    headers = {BUCKET_HEADER: "descriptions-status", KEY_HEADER: key, REVISION_HEADER: "0"}
    answers: list[bytes] = []

    async def collect(msg: object) -> None:
        answers.append(getattr(msg, "data", b""))

    await hub.nc.subscribe("_INBOX.forged", cb=collect)
    # As the server would when someone names A's intake as the reply of their own request.
    await hub.nc.publish(
        intake_subject(a.namespace, "put"), b'{"phase":"Success"}', reply="_INBOX.forged", headers=headers
    )
    await hub.nc.publish(intake_subject(a.namespace, "put"), b'{"phase":"Success"}', headers=headers)
    # A positive control through the same intake proves it is serving.
    await a.statuses().put(key, status(DescriptionPhase.FAILURE), 0)
    await eventually(lambda: stored(hub, "descriptions-status", key), timeout=10, what="A's own write")
    assert json.loads(await stored(hub, "descriptions-status", key) or b"{}") == {"phase": "Failure"}
    assert answers == []


def test_rate_limiter_refills_at_its_rate_and_keeps_clusters_apart() -> None:
    limiter = RateLimiter(rate=10, burst=3)
    assert [limiter.allow("a", now=0.0) for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b", now=0.0)
    assert not limiter.allow("a", now=0.05)
    assert limiter.allow("a", now=0.1)
    bounded = RateLimiter(rate=1, burst=1, max_clusters=2)
    for who in ("a", "b", "c"):
        bounded.allow(who, now=0.0)
    assert len(bounded._buckets) == 2


async def test_get_reads_only_own_keys(hub: RegistrationHub, pair: tuple[Registered, Registered]) -> None:
    a, b = pair
    assert await a.intake.get("descriptions", f"{a.namespace}.app") is not None
    assert await a.intake.get("descriptions", f"{a.namespace}.missing") is None
    for bucket, key in (("descriptions", f"{b.namespace}.app"), ("bootstraptokens", f"{a.namespace}.x")):
        with pytest.raises(IntakeRefusedError) as refused:
            await a.intake.get(bucket, key)
        assert refused.value.code == 403


async def test_follow_delivers_own_descriptions_inside_own_inbox(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, b = pair
    descriptions = JsonBucket(hub.nc.jetstream(), "descriptions")
    got: list[tuple[str, int]] = []

    async def on_delivery(msg: Msg) -> None:
        if msg.data:  # idle heartbeats carry no data
            got.append((msg.subject, msg.metadata.sequence.stream))

    await a.nc.subscribe(a.intake.deliver_subject, cb=on_delivery)
    assert await a.intake.follow(0) == 1
    await eventually(lambda: len(got) == 1, timeout=10, what="A's Description delivered")
    assert got[0][0] == f"$KV.descriptions.{a.namespace}.app"
    later = await descriptions.create(f"{a.namespace}.second", b"{}")
    await descriptions.create(f"{b.namespace}.second", b"{}")
    await eventually(lambda: len(got) == 2, timeout=10, what="a new Description delivered")
    assert got[1] == (f"$KV.descriptions.{a.namespace}.second", later)
    # Resuming after a sequence replaces the consumer: only what came after is delivered again.
    got.clear()
    assert await a.intake.follow(later) == 1
    await eventually(lambda: len(got) == 1, timeout=10, what="redelivery from the asked sequence")
    assert got == [(f"$KV.descriptions.{a.namespace}.second", later)]
    # Asking again as at first (the consumer made then is still there): all of it again.
    got.clear()
    assert await a.intake.follow(0) == 2
    await eventually(lambda: len(got) == 2, timeout=10, what="A's Descriptions delivered again")
    assert {subject for subject, _ in got} == {f"$KV.descriptions.{a.namespace}.{n}" for n in ("app", "second")}
    with pytest.raises(IntakeRefusedError) as refused:
        await a.intake.follow(later + 1_000_000)
    assert refused.value.code == 410


async def test_a_cluster_ignoring_its_429s_is_disconnected_and_refused_a_while(
    hub: RegistrationHub, pair: tuple[Registered, Registered]
) -> None:
    a, b = pair
    headers = {BUCKET_HEADER: "nowhere", KEY_HEADER: f"{a.namespace}.x", REVISION_HEADER: "0"}
    # Burst (1,000) plus the refusals it may collect (500) and then some, without waiting for answers.
    for _ in range(2500):
        if a.nc.is_closed or not a.nc.is_connected:
            break
        await a.nc.publish(intake_subject(a.namespace, "put"), b"{}", reply=a.nc.new_inbox(), headers=headers)
    await eventually(lambda: not a.nc.is_connected, timeout=15, what="the flooding cluster is disconnected")
    assert hub.callout.penalties.refusal(a.intake.cluster_id) is not None
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await Client().connect(hub.secure.server.url, a.intake.cluster_id, a.secret)
    again = await Client().connect(hub.secure.server.url, b.intake.cluster_id, b.secret)  # B is not banned
    await again.close()
    assert await b.statuses().put(f"{b.namespace}.app", status(), 0) > 0

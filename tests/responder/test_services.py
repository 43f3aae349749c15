"""Each service that answers requests does so through the shared responder, so an unexpected
error in any of them reaches the requester as an error answer saying why (the callout's own
case is tests/registration/test_callout_hardening.py: an unexpected error is a refusal)."""

from __future__ import annotations

import json

import nats
import pytest
from clusternet_nats.agent.applier import DescriptionApplier
from clusternet_nats.agent.backends.sim.cluster import SimCluster
from clusternet_nats.agent.backends.sim.nodes import Sizing
from clusternet_nats.agent.identity import ClusterIdentity
from clusternet_nats.agent.push_responder import PushResponder
from clusternet_nats.api.clusters import ClusterRegistrationRequest, ClusterRegistrationRequestSpec
from clusternet_nats.api.push import PushReply, PushRequest, proxy_subject
from clusternet_nats.api.registration import (
    APPROVED,
    PENDING,
    RegistrationReply,
    RegistrationRequest,
    credential_hash,
    new_secret,
    registering_inbox_prefix,
    registration_subject,
)
from clusternet_nats.domain.names import registration_request_name
from clusternet_nats.hub.intake.service import Intake
from clusternet_nats.hub.registration.registrar import Registrar
from clusternet_nats.predictor import service as predictor
from clusternet_nats.predictor.messages import accommodation_subject
from clusternet_nats.runtime.connection import Connection
from clusternet_nats.runtime.service import CommonOptions, ServiceContext
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store.errors import IntakeRefusedError
from clusternet_nats.store.intake import IntakeClient
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from tests.registration.harness import Client, RegistrationHub, hub, new_cluster_id, register

__all__ = ["hub"]


async def boom(*_: object) -> None:
    raise RuntimeError("boom: internals")


def sync_boom(*_: object) -> None:
    raise RuntimeError("boom")


async def test_predictor(
    nats_server: NatsServer, nc: NATS, unique_ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(predictor.Predictor, "_reply", sync_boom)

    async def ask() -> dict[str, object] | None:
        try:
            msg = await nc.request(accommodation_subject(unique_ns, "edge"), b"{}", timeout=2)
        except NoRespondersError:
            return None
        answer: dict[str, object] = json.loads(msg.data)
        return answer

    async with running_service("clusternet-predictor", predictor.build, nats_server.url):
        answer = await eventually(ask, 10, what="the predictor answers")
    assert answer == {"error": "the predictor failed unexpectedly (RuntimeError('boom'))"}


async def test_push_responder(nats_server: NatsServer, nc: NATS, monkeypatch: pytest.MonkeyPatch) -> None:
    identity = ClusterIdentity(new_cluster_id(), "edge")
    conn = Connection(nats_server.url, "agent")
    agent_nc = await conn.connect()
    applier = DescriptionApplier(SimCluster("edge", Sizing()))
    monkeypatch.setattr(applier, "remove", boom)
    pushes = PushResponder(ServiceContext("agent", CommonOptions(), conn, agent_nc), identity, applier)
    await pushes.responder.start()
    try:
        subject = proxy_subject(identity.namespace, identity.name, "apply")
        request = PushRequest(key=f"{identity.namespace}.gone").to_json()
        msg = await request_cluster(nc, identity.namespace, subject, request, 5)
        reply = PushReply.model_validate_json(msg.data)
        assert reply.error == "the agent of cluster edge failed unexpectedly (RuntimeError('boom: internals'))"
        # not the hub's request (its reply is not under the cluster's reply prefix): no answer
        with pytest.raises(nats.errors.TimeoutError):
            await nc.request(subject, request, timeout=0.5)
        assert pushes.responder.stats.dropped == 1
    finally:
        await pushes.responder.stop()
        await conn.close()


async def test_registrar(hub: RegistrationHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Registrar, "register", boom)
    cluster_id = new_cluster_id()
    token = await hub.token()
    nc = await Client().connect(hub.secure.server.url, cluster_id, token, registering_inbox_prefix(cluster_id))
    try:
        spec = ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="c")
        request = ClusterRegistrationRequest.new(registration_request_name(cluster_id), spec=spec)
        body = RegistrationRequest(request=request, credential_hash=credential_hash(new_secret()))
        msg = await nc.request(registration_subject(cluster_id), body.model_dump_json(by_alias=True).encode(), 5)
    finally:
        await nc.close()
    reply = RegistrationReply.model_validate_json(msg.data)
    # Pending, so the agent asks again; the reason names the error's type, not its text (a token
    # holder is not trusted with the hub's internals).
    assert reply.result == PENDING
    assert reply.error_message == "the hub's registrar failed unexpectedly (RuntimeError, logged)"


async def test_intake(hub: RegistrationHub, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster_id = new_cluster_id()
    reply, secret = await register(hub.secure.server.url, cluster_id, await hub.token())
    assert reply.result == APPROVED and reply.dedicated_namespace
    nc = await Client().connect(hub.secure.server.url, cluster_id, secret)
    try:
        intake = IntakeClient(nc, cluster_id, reply.dedicated_namespace)
        monkeypatch.setattr(Intake, "_handle", boom)
        with pytest.raises(IntakeRefusedError) as refused:
            await intake.get("descriptions", f"{reply.dedicated_namespace}.app")
    finally:
        await nc.close()
    assert refused.value.code == 500
    assert str(refused.value).endswith("the hub's intake failed unexpectedly (RuntimeError, logged)")

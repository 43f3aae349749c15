"""Bootstrap tokens: only a valid, unexpired, unrevoked token registers, and refusals say why."""

from __future__ import annotations

from datetime import timedelta

import nats.errors
import pytest
from clusternet_nats.agent.registration import request_registration
from clusternet_nats.api.clusters import ClusterRegistrationRequestSpec
from clusternet_nats.api.registration import new_secret, registering_inbox_prefix
from clusternet_nats.hub.registration.callout import Refused
from clusternet_nats.hub.registration.records import token_store
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.testing.waiting import eventually

from tests.registration.harness import Client, RegistrationHub, new_cluster_id


async def refused(hub: RegistrationHub, cluster_id: str, password: str) -> str:
    """Asserts the server refuses the connection; returns the callout's reason."""
    before = hub.callout.refusals
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await Client().connect(hub.secure.server.url, cluster_id, password)
    assert hub.callout.refusals > before
    with pytest.raises(Refused) as reason:
        await hub.callout.decide(cluster_id, password)
    return str(reason.value)


async def test_malformed_token_is_refused(hub: RegistrationHub) -> None:
    reason = await refused(hub, new_cluster_id(), "not-a-token")
    assert "neither its credentials nor a bootstrap token" in reason


async def test_unknown_token_is_refused(hub: RegistrationHub) -> None:
    assert "does not exist or was revoked" in await refused(hub, new_cluster_id(), "abcdef.0123456789abcdef")


async def test_wrong_secret_is_refused(hub: RegistrationHub) -> None:
    token = await hub.token()
    assert "wrong secret" in await refused(hub, new_cluster_id(), token[:7] + "x" * 16)


async def test_expired_token_is_refused(hub: RegistrationHub) -> None:
    token = await hub.token(ttl=timedelta(seconds=-1))
    assert "expired at" in await refused(hub, new_cluster_id(), token)


async def test_revoked_token_is_refused(hub: RegistrationHub) -> None:
    token = await hub.token()
    await token_store(hub.nc.jetstream()).delete(token.split(".")[0])
    assert "does not exist or was revoked" in await refused(hub, new_cluster_id(), token)


async def test_user_must_be_a_cluster_id(hub: RegistrationHub) -> None:
    assert "is not a cluster id" in await refused(hub, "hub.>", await hub.token())


async def test_token_can_do_nothing_but_register(hub: RegistrationHub) -> None:
    cluster_id = new_cluster_id()
    client = Client()
    nc = await client.connect(hub.secure.server.url, cluster_id, await hub.token())
    await nc.publish("$KV.managedclusters.clusternet-x.y", b"{}")
    await nc.subscribe("clusternet.registration.>")
    await barrier(nc)
    violations = lambda: [e for e in client.errors if "permissions violation" in e.lower()]  # noqa: E731
    assert len(await eventually(lambda: len(violations()) >= 2 and violations(), timeout=5)) == 2
    await nc.close()


async def test_registration_is_idempotent_for_the_same_secret(hub: RegistrationHub) -> None:
    # An agent whose reply was lost asks again on its connection; a new token connection for the
    # now registered id would be refused (test_callout_hardening.py).
    cluster_id, secret = new_cluster_id(), new_secret()
    url, inbox = hub.secure.server.url, registering_inbox_prefix(cluster_id)
    nc = await Client().connect(url, cluster_id, await hub.token(), inbox)
    spec = ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="c")
    first = await request_registration(nc, spec, secret, timeout=10)
    again = await request_registration(nc, spec, secret, timeout=10)
    await nc.close()
    assert (again.result, again.dedicated_namespace) == (first.result, first.dedicated_namespace)

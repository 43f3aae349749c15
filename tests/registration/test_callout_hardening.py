"""The auth callout under attack: identity rules for bootstrap tokens, floods of bad CONNECTs from
this and another source, many valid connections at once, and errors that must still be answered.

Everything runs against the secured hub's real nats-server. Bad CONNECTs are sent over raw
sockets (the client protocol's INFO, CONNECT, PING), so 500 of them cost the test little; a
second source is another loopback address (127.0.0.2), which the server reports as the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
import string
from pathlib import Path

import nats.errors
import pytest
from clusternet_nats.api.clusters import (
    ClusterRegistrationRequest,
    ClusterRegistrationRequestSpec,
    ClusterRegistrationRequestStatus,
)
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
from clusternet_nats.api.registry import by_kind
from clusternet_nats.domain.names import registration_request_name
from clusternet_nats.hub.registration import permissions
from clusternet_nats.hub.registration.callout import ExpiringSet, Refused, SourceFailures, source_of
from clusternet_nats.hub.registration.records import CREDENTIALS_BUCKET, ClusterCredential, credential_store
from clusternet_nats.hub.registration.registrar import approved, placement
from clusternet_nats.hub.registration.testing import RegistrationHub, secured_hub
from clusternet_nats.store import JsonBucket, ObjectStore, StatusStore
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS

from tests.registration.harness import Client, new_cluster_id, register

FLOOD = 500
FLOOD_CONCURRENCY = 50
RECONNECT_DEADLINE = 2.0
"""Seconds a valid reconnect may take during a flood (nats-server's own auth timeout is 2 s)."""
VIOLATION = b"-ERR 'Authorization Violation'"


def _random(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def unknown_token() -> str:
    lower = string.ascii_lowercase + string.digits
    return f"{_random(lower, 6)}.{_random(lower, 16)}"


async def raw_connect(port: int, user: str, password: str, source: str = "127.0.0.1") -> bytes:
    """One CONNECT from `source` as a client library sends it; the server's first answer line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        await reader.readline()  # INFO
        options = {"user": user, "pass": password, "verbose": False, "pedantic": False, "protocol": 1}
        writer.write(f"CONNECT {json.dumps(options)}\r\nPING\r\n".encode())
        await writer.drain()
        return await asyncio.wait_for(reader.readline(), 10)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def bad_credentials(i: int, registered: str) -> tuple[str, str]:
    """Every kind of bad CONNECT: unknown tokens, wrong secrets for a real cluster, unknown
    clusters, malformed passwords and users that are not cluster ids."""
    return [
        (new_cluster_id(), unknown_token()),
        (registered, new_secret()),
        (new_cluster_id(), new_secret()),
        (new_cluster_id(), "not-a-credential"),
        ("hub.>", "x"),
    ][i % 5]


async def flood(port: int, source: str, registered: str) -> list[bytes]:
    gate = asyncio.Semaphore(FLOOD_CONCURRENCY)

    async def one(i: int) -> bytes:
        async with gate:
            return await raw_connect(port, *bad_credentials(i, registered), source=source)

    return await asyncio.gather(*(one(i) for i in range(FLOOD)))


async def ask_once(nc: NATS, cluster_id: str, secret: str) -> RegistrationReply:
    """One registration request, answered Pending or not (an agent polls; this asks once)."""
    spec = ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="c")
    request = ClusterRegistrationRequest.new(f"clusternet-{cluster_id}", spec=spec)
    body = RegistrationRequest(request=request, credential_hash=credential_hash(secret))
    msg = await nc.request(
        registration_subject(cluster_id), body.model_dump_json(by_alias=True, exclude_none=True).encode(), timeout=5
    )
    return RegistrationReply.model_validate_json(msg.data)


async def refusal(hub: RegistrationHub, cluster_id: str, password: str) -> str:
    with pytest.raises(Refused) as refused:
        await hub.callout.decide(cluster_id, password)
    return str(refused.value)


async def test_a_token_cannot_connect_as_a_registered_cluster(hub: RegistrationHub) -> None:
    url, cluster_id = hub.secure.server.url, new_cluster_id()
    reply, secret = await register(url, cluster_id, await hub.token())
    assert reply.result == APPROVED
    registered = f"cluster id {cluster_id} is already registered; it connects with its own credentials"
    token = await hub.token()
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await Client().connect(url, cluster_id, token, registering_inbox_prefix(cluster_id))
    assert await refusal(hub, cluster_id, token) == registered
    assert (await hub.callout.decide(cluster_id, secret))[0] == cluster_id
    # Revoked (its ManagedCluster deleted, the credential not yet gone): still not the token's.
    credentials = credential_store(hub.nc.jetstream())
    held = await credentials.get(cluster_id)
    assert held is not None
    await credentials.put(cluster_id, held.value.model_copy(update={"revoked": True}), held.revision)
    assert await refusal(hub, cluster_id, token) == registered
    assert "revoked" in await refusal(hub, cluster_id, secret)
    # The same token still registers an id no one holds.
    fresh = new_cluster_id()
    nc = await Client().connect(url, fresh, token, registering_inbox_prefix(fresh))
    await nc.close()


async def test_a_pending_agent_asks_again_with_its_own_secret(tmp_path: Path) -> None:
    async with secured_hub(tmp_path, manual_approval=True) as hub:
        url, cluster_id, secret = hub.secure.server.url, new_cluster_id(), new_secret()
        inbox = registering_inbox_prefix(cluster_id)
        with_token = await Client().connect(url, cluster_id, await hub.token(), inbox)
        assert (await ask_once(with_token, cluster_id, secret)).result == PENDING
        await with_token.close()

        # Restarted while Pending: the agent's own secret grants registration, nothing more.
        assert await hub.callout.decide(cluster_id, secret) == (
            f"registering:{cluster_id}",
            permissions.registering(cluster_id),
        )
        client = Client()
        with_secret = await client.connect(url, cluster_id, secret, inbox)
        assert (await ask_once(with_secret, cluster_id, secret)).result == PENDING
        assert "wrong secret" in await refusal(hub, cluster_id, new_secret())
        namespace, name = placement(ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="c"))
        await with_secret.subscribe(f"clusternet.proxy.{namespace}.>")
        await eventually(
            lambda: any("permissions violation" in e.lower() for e in client.errors),
            timeout=5,
            what="a pending cluster has none of a cluster's permissions",
        )

        # An administrator approves (as `cnet approve clsrr` does); the next ask learns it.
        info = by_kind("ClusterRegistrationRequest")
        status = StatusStore(hub.nc.jetstream(), info.status_bucket or "", ClusterRegistrationRequestStatus)
        key = ObjectStore(hub.nc.jetstream(), info).key(None, registration_request_name(cluster_id))
        current = await status.get(key)
        assert current is not None and current.value.result == PENDING
        await status.put(key, approved(namespace, name), current.revision)
        reply = await ask_once(with_secret, cluster_id, secret)
        assert reply.result == APPROVED and reply.dedicated_namespace == namespace
        await with_secret.close()
        assert (await hub.callout.decide(cluster_id, secret))[0] == cluster_id


@pytest.mark.parametrize("flood_source", ["127.0.0.2", "127.0.0.1"], ids=["other-source", "same-source"])
async def test_valid_reconnects_survive_a_flood_of_bad_connects(hub: RegistrationHub, flood_source: str) -> None:
    url, port, callout = hub.secure.server.url, hub.secure.server.port, hub.callout
    cluster_id = new_cluster_id()
    reply, secret = await register(url, cluster_id, await hub.token())
    assert reply.result == APPROVED
    await (await Client().connect(url, cluster_id, secret)).close()
    stats = callout.stats
    before = dataclasses.replace(stats)
    loop = asyncio.get_running_loop()

    flooding = asyncio.create_task(flood(port, flood_source, cluster_id))
    durations: list[float] = []
    during = 0
    while not flooding.done() or len(durations) < 5:
        started = loop.time()
        await (await Client().connect(url, cluster_id, secret)).close()
        durations.append(loop.time() - started)
        during += not flooding.done()
    answers = await flooding

    assert all(answer.startswith(VIOLATION) for answer in answers), {a[:60] for a in answers}
    assert during >= 3, "the flood ended before valid reconnects overlapped it"
    assert max(durations) < RECONNECT_DEADLINE, durations
    assert stats.throttled > before.throttled
    # Refusals are cheap: past the first failures, the flood never reaches the store. Without the
    # per-source limit, 300 of these 500 would each read it once.
    flood_reads = stats.store_reads - before.store_reads - len(durations)
    assert flood_reads <= callout.limits.source_failures + FLOOD_CONCURRENCY, flood_reads
    reads = stats.store_reads
    assert await refusal_from(hub, flood_source) == f"too many failed attempts from {flood_source}"
    assert stats.store_reads == reads

    if flood_source != "127.0.0.1":  # another source is not throttled at all: new clusters register
        fresh = new_cluster_id()
        reply, fresh_secret = await register(url, fresh, await hub.token())
        assert reply.result == APPROVED
        await (await Client().connect(url, fresh, fresh_secret)).close()


async def test_a_throttled_source_lets_registered_clusters_in_by_their_secret(hub: RegistrationHub) -> None:
    """A hub just restarted remembers no granted pair, and a NAT shared with a failing attacker
    must not lock out the clusters behind it: the informer's copy of the credentials lets a
    registered cluster's own secret pass, checked in memory. Wrong secrets, unknown ids and a
    revoked cluster's secret are still refused there without a store read."""
    callout, source = hub.callout, "127.0.0.3"
    registered = callout.registered
    assert registered is not None
    cluster_id, revoked_id = new_cluster_id(), new_cluster_id()
    (reply, secret), (revoked_reply, revoked_secret) = [
        await register(hub.secure.server.url, each, await hub.token()) for each in (cluster_id, revoked_id)
    ]
    assert reply.result == revoked_reply.result == APPROVED
    store = credential_store(hub.nc.jetstream())
    held = await store.get(revoked_id)
    assert held is not None
    await store.put(revoked_id, held.value.model_copy(update={"revoked": True}), held.revision)
    await eventually(
        lambda: all((seen := registered.get(each)) is not None and seen.approved for each in (cluster_id, revoked_id))
        and (seen := registered.get(revoked_id)) is not None
        and seen.revoked,
        timeout=10,
        what="the callout's informer holds both credentials",
    )
    for _ in range(callout.limits.source_failures):  # wrong secrets from the source, over the wire
        assert (await raw_connect(hub.secure.server.port, cluster_id, new_secret(), source)).startswith(VIOLATION)
    reads = callout.stats.store_reads
    throttled = f"too many failed attempts from {source}"
    assert await refusal_from(hub, source) == throttled
    for user, password in ((cluster_id, new_secret()), (revoked_id, revoked_secret)):
        with pytest.raises(Refused, match=throttled):
            await callout.decide(user, password, source)
    assert callout.stats.store_reads == reads
    # Never granted with its secret (as after a restart), yet decided as usual: one read.
    assert await callout.decide(cluster_id, secret, source) == (
        cluster_id,
        permissions.cluster(cluster_id, reply.dedicated_namespace or "", "hub"),
    )
    assert callout.stats.store_reads == reads + 1


async def refusal_from(hub: RegistrationHub, host: str) -> str:
    with pytest.raises(Refused) as refused:
        await hub.callout.decide(new_cluster_id(), new_secret(), host)
    return str(refused.value)


async def test_many_valid_connections_at_once(hub: RegistrationHub) -> None:
    url = hub.secure.server.url
    token = await hub.token()
    ids = [new_cluster_id() for _ in range(10)]
    registered = await asyncio.gather(*(register(url, cluster_id, token) for cluster_id in ids))
    assert {reply.result for reply, _ in registered} == {APPROVED}
    pairs = [(cluster_id, secret) for cluster_id, (_, secret) in zip(ids, registered, strict=True)] * 20

    connected = await asyncio.gather(
        *(Client().connect(url, cluster_id, secret) for cluster_id, secret in pairs), return_exceptions=True
    )
    failed = [repr(c) for c in connected if isinstance(c, BaseException)]
    await asyncio.gather(*(c.close() for c in connected if isinstance(c, NATS)))
    assert failed == [] and len(connected) == 200
    assert hub.callout.responder.peak_in_flight > 1


async def test_an_unexpected_error_is_answered_with_a_refusal(hub: RegistrationHub) -> None:
    url, broken = hub.secure.server.url, new_cluster_id()
    await JsonBucket(hub.nc.jetstream(), CREDENTIALS_BUCKET).create(broken, b"{not a credential")
    stats = hub.callout.responder.stats
    before = dataclasses.replace(stats)
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await Client().connect(url, broken, new_secret())
    assert stats.failed == before.failed + 1
    await eventually(lambda: stats.answered - before.answered == stats.received - before.received, timeout=5)
    # and the callout goes on deciding
    cluster_id = new_cluster_id()
    reply, secret = await register(url, cluster_id, await hub.token())
    assert reply.result == APPROVED
    await (await Client().connect(url, cluster_id, secret)).close()


async def test_unknown_ids_are_refused_from_memory_but_not_past_a_registration(hub: RegistrationHub) -> None:
    stats = hub.callout.stats
    reads = stats.store_reads
    token, unknown = unknown_token(), new_cluster_id()
    for _ in range(10):
        assert "does not exist" in await refusal(hub, new_cluster_id(), token)
        assert "no such cluster" in await refusal(hub, unknown, new_secret())
        assert "neither its credentials nor a bootstrap token" in await refusal(hub, unknown, "short")
    assert stats.store_reads == reads + 2
    # The miss on `unknown` is cached, yet the agent that registers it connects at once.
    reply, secret = await register(hub.secure.server.url, unknown, await hub.token())
    assert reply.result == APPROVED
    await (await Client().connect(hub.secure.server.url, unknown, secret)).close()


async def test_a_miss_cached_before_a_registration_does_not_refuse_its_secret(hub: RegistrationHub) -> None:
    """Someone tries an id with a wrong secret just before it registers (through another hub
    replica, say: this callout never granted its token): once the informer holds the credential,
    the cached miss is not believed and the agent's first connection with its secret is granted."""
    cluster_id, secret = new_cluster_id(), new_secret()
    assert "no such cluster" in await refusal(hub, cluster_id, new_secret())
    namespace, name = placement(ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="c"))
    credential = ClusterCredential(
        cluster_id=cluster_id, namespace=namespace, name=name, secret_hash=credential_hash(secret), approved=True
    )
    await credential_store(hub.nc.jetstream()).put(cluster_id, credential, 0)
    registered = hub.callout.registered
    assert registered is not None
    await eventually(lambda: registered.get(cluster_id) is not None, timeout=10, what="the informer holds it")
    assert (await hub.callout.decide(cluster_id, secret))[0] == cluster_id


def test_failure_accounting_and_caches_stay_bounded() -> None:
    failures = SourceFailures(limit=3, window=10.0, size=100)
    for i in range(10_000):
        failures.failed(f"10.0.{i // 256}.{i % 256}", now=0.0)
    assert len(failures) == 100
    assert [failures.failed("192.0.2.1", now=1.0) for _ in range(3)] == [False, False, True]
    assert failures.throttled("192.0.2.1", now=10.9) and not failures.throttled("192.0.2.1", now=11.0)
    cache = ExpiringSet(ttl=5.0, size=100)
    for i in range(10_000):
        cache.add(str(i), now=0.0)
    assert len(cache) == 100 and cache.has("9999", now=4.9) and not cache.has("9999", now=5.0)


def test_sources_are_addresses_or_ipv6_networks() -> None:
    assert source_of("192.0.2.7") == "192.0.2.7"
    assert source_of("::ffff:192.0.2.7") == "192.0.2.7"
    assert source_of("2001:db8:1:2:aaaa::1") == source_of("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert source_of("x" * 500) == "x" * 64

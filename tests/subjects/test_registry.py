"""Every subject the system uses is in api/subjects.py, and the grants are what the table says.

The live test runs the secured hub (callout, registrar, revoker, intake), the predictor and two
registered agents (one following its Descriptions, one serving pushes) on a real nats-server,
records every message the application and callout accounts carry (subject and reply) and every
subscription the server holds, and fails on any that no entry of the registry matches: a
subject spelled outside the table, or a bucket missing from it, shows up here.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent, StatusSettings
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.agent.registration import Enrollment, RegistrationSettings
from clusternet_nats.api import subjects
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.push import PushReply, PushRequest, proxy_subject
from clusternet_nats.api.subjects import BUCKETS, KV, SUBJECTS, Party, subject_for
from clusternet_nats.hub.registration import permissions
from clusternet_nats.predictor import service as predictor
from clusternet_nats.predictor.messages import accommodation_subject
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.store.buckets import bucket_names
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.registration.harness import RegistrationHub, hub

__all__ = ["hub"]


def test_grants_are_the_table_bound_to_the_identity() -> None:
    granted = permissions.cluster("c1", "clusternet-abcde")
    assert granted.publish == [
        "clusternet.intake.clusternet-abcde.>",
        "clusternet.reply.clusternet-abcde.>",
        "clusternet.heartbeat.clusternet-abcde.c1",  # its liveness (api/heartbeat.py), its own subject only
        "clusternet.registration.c1",
    ]
    assert granted.subscribe == [
        "_INBOX_c1.>",
        "clusternet.proxy.clusternet-abcde.>",
        "clusternet.sockets.clusternet-abcde.>",  # the hub's proxied exchanges (api/proxy.py)
        "_INBOX_REG_c1.>",
    ]
    token = permissions.registering("c1")
    assert (token.publish, token.subscribe) == (["clusternet.registration.c1"], ["_INBOX_REG_c1.>"])
    # Every subject a cluster is granted is one the table says it uses, and no hub-only subject is.
    for grant in granted.publish + granted.subscribe:
        entry = next(e for e in SUBJECTS if e.admits(grant))
        assert Party.CLUSTER in entry.publishers | entry.subscribers, (grant, entry.pattern)


def test_patterns_format_parse_and_filter() -> None:
    assert subjects.PROXY.parse(proxy_subject("ns", "edge.one", "apply")) == {
        "namespace": "ns",
        "name": "edge.one",
        "verb": "apply",
    }
    assert subjects.PREDICTOR.filter() == "predictor.*.>"
    assert subjects.INTAKE.filter() == "clusternet.intake.*.*"
    assert subjects.EVENTS.grant() == "events.>"
    assert not subjects.INTAKE.admits("clusternet.>") and not subjects.HUB_INBOX.admits(">")
    with pytest.raises(ValueError, match="cannot wildcard"):
        subjects.CLUSTER_INBOX.filter()


def test_every_bucket_services_make_is_registered() -> None:
    registered = {bucket.name for bucket in BUCKETS}
    assert set(bucket_names()) <= registered
    assert {"bootstraptokens", "clustercredentials"} <= registered - set(bucket_names())


RECORDER = "subjects-recorder"


class Recorder:
    """Every message one account carries, and who it came back to."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()

    async def record(self, msg: Msg) -> None:
        self.seen.add((msg.subject, msg.reply))


@pytest.fixture
async def recorders(hub: RegistrationHub) -> AsyncIterator[list[Recorder]]:
    recorders: list[Recorder] = []
    connections: list[NATS] = []
    for user in ("hub", "callout"):
        nc = await nats.connect(hub.secure.url(user), name=RECORDER)
        recorder = Recorder()
        await nc.subscribe(">", cb=recorder.record)
        await barrier(nc)
        recorders.append(recorder)
        connections.append(nc)
    yield recorders
    for nc in connections:
        await nc.close()


def unmatched_subject(subject: str) -> str | None:
    """Why `subject` is not in the registry, or None."""
    entry = subject_for(subject)
    if entry is None:
        return "no entry"
    if entry is KV:
        found = KV.parse(subject)
        if found is None or found["bucket"] not in {b.name for b in BUCKETS}:
            return "a bucket missing from BUCKETS"
    return None


def subscriptions(hub: RegistrationHub) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{hub.secure.server.monitor_port}/connz?subs=detail&limit=10000"
    with urllib.request.urlopen(url, timeout=5) as answer:
        connz = json.load(answer)
    connections = [conn for conn in connz.get("connections") or [] if conn.get("name") != RECORDER]
    return [sub for conn in connections for sub in conn.get("subscriptions_list_detail") or []]


async def start_agent(
    hub: RegistrationHub, tmp_path: Path, name: str, mode: ClusterSyncMode, pusher: bool
) -> ClusterAgent:
    identity = single_cluster(name, None, {}, mode)
    settings = RegistrationSettings(await hub.token(), tmp_path / name)
    agent = ClusterAgent(
        identity, SimCluster(name, Sizing()), 5.0, StatusSettings(app_pusher=pusher), Enrollment(settings, identity)
    )
    await agent.start(CommonOptions(nats_url=hub.secure.server.url, health_port=-1, jetstream_domain="hub"))
    await eventually(lambda: agent.ready, timeout=20, what=f"agent {name} ready")
    return agent


async def test_every_subject_used_is_registered(
    hub: RegistrationHub, recorders: list[Recorder], tmp_path: Path
) -> None:
    async with running_service("clusternet-predictor", predictor.build, hub.secure.url("predictor")):
        pulling = await start_agent(hub, tmp_path, "pulling", ClusterSyncMode.PULL, False)
        pushed = await start_agent(hub, tmp_path, "pushed", ClusterSyncMode.PUSH, True)
        try:
            namespace = pushed.identity.namespace
            subject = proxy_subject(namespace, "pushed", "apply")

            async def pushed_ok() -> bool:
                request = PushRequest(key=f"{namespace}.x").to_json()
                answer = await request_cluster(hub.nc, namespace, subject, request, 5)
                # An empty answer is the server's "no responders": the agent's loop not yet subscribed.
                return bool(answer.data) and PushReply.model_validate_json(answer.data).error is None

            await eventually(pushed_ok, 15, what="the agent answers a push")

            async def predicted() -> bytes | None:
                ask = accommodation_subject(pulling.identity.namespace, "pulling")
                reply = json.loads((await hub.nc.request(ask, b'{"requirements": {}}', timeout=2)).data)
                return reply if "maxAcceptableReplicas" in reply else None

            await eventually(predicted, 15, what="the predictor answers about a heartbeating cluster")
            subs = subscriptions(hub)
        finally:
            await pulling.stop()
            await pushed.stop()

    seen = set().union(*(r.seen for r in recorders))
    used = {s for pair in seen for s in pair if s}
    filters = {sub["subject"] for sub in subs}
    # The scenario reached what the registry is about (a positive control for the checks below).
    for entry in (subjects.REGISTRATION, subjects.REGISTERING_INBOX, subjects.CLUSTER_INBOX, subjects.INTAKE,
                  subjects.PROXY, subjects.CLUSTER_REPLY, subjects.PREDICTOR, subjects.DESCRIPTIONS_DELIVERY,
                  subjects.AUTH_REQUEST, KV):  # fmt: skip
        assert any(entry.matches(s) for s in used | filters), f"the scenario never used {entry.pattern}"
    unmatched = {s: why for s in used if (why := unmatched_subject(s))}
    assert unmatched == {}, "subjects used that api/subjects.py does not list"
    stray = sorted(f for f in filters if not any(entry.admits(f) for entry in SUBJECTS))
    assert stray == [], "subscriptions that api/subjects.py does not list"

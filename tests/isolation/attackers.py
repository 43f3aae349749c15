"""What the adversarial isolation suite's attackers and victims are made of.

An *attacker* holds what a real adversary would: a registered cluster's own credential (cluster
A), or a bootstrap token. It never gets hub or system credentials; where a test needs a secret
the attacker should not have (B's inbox, B's consumer name), the test reads it through the
system account and hands it over, to prove the defence holds even once that secret leaks.

A *victim* is cluster B: either a plain registered connection, or a REAL agent process in
registration mode with the simulated backend, whose applied objects (its `--state-dir` state
file) and reported Description statuses are what the tests observe.

Every helper is bounded in time; permission violations arrive at the attacker's error_cb
(`Attacker.violations`), never as exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import nats.errors
from clusternet_nats.agent.backends.sim.persistence import saved_states
from clusternet_nats.agent.registration import saved_credentials
from clusternet_nats.api.apps import DeployerType, Description, DescriptionSpec
from clusternet_nats.api.registration import (
    APPROVED,
    agent_consumer_name,
    inbox_prefix,
    intake_subject,
    registering_inbox_prefix,
)
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.registration.harness import RegistrationHub, new_cluster_id, register, running_agent

VIOLATION = "permissions violation"
DOMAIN_API = "$JS.hub.API"
"""The JetStream API as a cluster reaches it (agents run with `--jetstream-domain hub`)."""
DIRECT_API = "$JS.API"
APIS = (DOMAIN_API, DIRECT_API)
FOLLOWED = "descriptions"
FOLLOWED_STREAM = "KV_descriptions"
CLUSTER_WRITTEN = ("descriptions-status", "managedclusters", "managedclusters-status", "node-inventories")
"""Buckets holding records a cluster writes (today by publishing, hardened through the intake)."""
ALL_CLUSTER_BUCKETS = (FOLLOWED, *CLUSTER_WRITTEN)
INTAKE_BUCKET, INTAKE_KEY, INTAKE_REVISION = "Clusternet-Bucket", "Clusternet-Key", "Clusternet-Expected-Revision"
SHORT = 2.0
"""How long an attacker waits for an answer that should never come."""


def accepted(answer: dict[str, Any] | None) -> bool:
    """A JetStream API answer that did what was asked (not refused, unanswered or an error)."""
    return answer is not None and "error" not in answer


@dataclass
class Connection:
    """One connection of the attacker's, with what the server told it through error_cb."""

    nc: NATS
    errors: list[str] = field(default_factory=list)

    def violations(self) -> int:
        return sum(VIOLATION in err.lower() for err in self.errors)

    async def ask(
        self, subject: str, data: bytes = b"", headers: dict[str, str] | None = None, timeout: float = SHORT
    ) -> Msg | None:
        """A request whose answer may never come: None when refused, unanswered or no responders."""
        try:
            return await self.nc.request(subject, data, timeout=timeout, headers=headers)
        except (TimeoutError, nats.errors.Error):  # timeouts, no responders, a connection the hub closed
            return None

    async def direct_get(self, bucket: str, key: str, timeout: float = 5.0) -> Msg | None:
        """Reads a key as a cluster may: a direct get naming the key in the subject, no STREAM.INFO."""
        msg = await self.ask(f"{DOMAIN_API}.DIRECT.GET.KV_{bucket}.$KV.{bucket}.{key}", b"", timeout=timeout)
        return None if msg is None or (msg.headers or {}).get("Status") else msg

    async def listen(self, subject: str, queue: str = "") -> list[Msg]:
        """Everything that arrives on `subject` from now on, collected into the returned list."""
        got: list[Msg] = []

        async def collect(msg: Msg) -> None:
            got.append(msg)

        await self.nc.subscribe(subject, queue=queue, cb=collect)
        return got

    async def settle(self) -> None:
        """Round trip to the server: every publish and subscription before it has been processed."""
        with contextlib.suppress(Exception):
            await barrier(self.nc, 5)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.nc.close()


async def connect(url: str, user: str, password: str | None, prefix: str) -> Connection:
    """Connects (raises on refusal); errors the server reports later are recorded."""
    errors: list[str] = []

    async def on_error(err: Exception) -> None:
        errors.append(str(err))

    nc = await nats.connect(
        url.replace("nats://", f"nats://{user}:{password}@") if password else url,
        inbox_prefix=prefix,
        error_cb=on_error,
        allow_reconnect=False,
        connect_timeout=2,
        max_reconnect_attempts=0,
    )
    return Connection(nc, errors)


@dataclass
class Attacker(Connection):
    """A registered cluster's connection, with its own credential: the adversary of this suite."""

    cluster_id: str = ""
    namespace: str = ""
    secret: str = ""
    refused_consumers: bool = False
    """The hub refused this cluster a consumer of its own (hardened: clusters hold none)."""
    intake_answers: bool | None = None

    @property
    def consumer(self) -> str:
        """The one consumer name the hardened hub lets this cluster hold."""
        return agent_consumer_name(self.namespace)

    # -- JetStream, as a cluster may (or may try to) reach it -------------------------------------

    async def js_api(
        self, op: str, body: dict[str, Any] | None = None, api: str = DOMAIN_API, timeout: float = SHORT
    ) -> dict[str, Any] | None:
        """A JetStream API request; the decoded answer, or None when refused or unanswered."""
        msg = await self.ask(f"{api}.{op}", json.dumps(body).encode() if body is not None else b"", timeout=timeout)
        return None if msg is None else json.loads(msg.data or b"{}")

    async def create_consumer(
        self,
        name: str | None = None,
        stream: str = FOLLOWED_STREAM,
        bucket: str = FOLLOWED,
        namespace: str | None = None,
        **config: Any,
    ) -> dict[str, Any] | None:
        """CONSUMER.CREATE with the filter in the subject (as the grants require); by default this
        cluster's own fixed-name consumer on its own Descriptions, delivering everything."""
        name = name or self.consumer
        subject_filter = f"$KV.{bucket}.{namespace or self.namespace}.>"
        cfg = {
            "name": name,
            "durable_name": name,
            "ack_policy": "none",
            "deliver_policy": "all",
            "filter_subject": subject_filter,
            "inactive_threshold": int(60e9),
            **config,
        }
        return await self.js_api(
            f"CONSUMER.CREATE.{stream}.{name}.{subject_filter}", {"stream_name": stream, "config": cfg}
        )

    async def delete_consumer(self, name: str | None = None, stream: str = FOLLOWED_STREAM) -> dict[str, Any] | None:
        return await self.js_api(f"CONSUMER.DELETE.{stream}.{name or self.consumer}")

    async def fresh_consumer(self, stream: str = FOLLOWED_STREAM, **config: Any) -> dict[str, Any] | None:
        """Its own consumer, deleted and made again, so its consumer sequence starts at 1. Once the
        hub has refused it a consumer, asks no more (each refusal costs a timeout)."""
        if self.refused_consumers:
            return None
        await self.delete_consumer(stream=stream)
        answer = await self.create_consumer(stream=stream, **config)
        self.refused_consumers = answer is None
        return answer

    async def pull(
        self,
        reply: str,
        batch: int = 10,
        name: str | None = None,
        stream: str = FOLLOWED_STREAM,
        expires: float = 2.0,
        **extra: Any,
    ) -> None:
        """CONSUMER.MSG.NEXT with any reply subject: NATS does not check it, so the server delivers
        wherever the attacker says."""
        body = {"batch": batch, "expires": int(expires * 1e9), **extra}
        await self.nc.publish(
            f"{DOMAIN_API}.CONSUMER.MSG.NEXT.{stream}.{name or self.consumer}", json.dumps(body).encode(), reply=reply
        )
        await self.settle()

    async def pulled_own(self, timeout: float = 5.0) -> list[Msg]:
        """Its own consumer's deliveries of its own Descriptions to its own inbox: a positive
        control where clusters may pull (empty where they hold no consumer at all)."""
        inbox = self.nc.new_inbox()
        got = await self.listen(inbox)
        await self.pull(inbox, batch=10)
        with contextlib.suppress(TimeoutError):
            await eventually(lambda: any(not (m.headers or {}).get("Status") for m in got), timeout)
        return [m for m in got if not (m.headers or {}).get("Status")]

    async def follows_own(self, timeout: float = 10.0) -> bool:
        """Positive control: this cluster follows its own Descriptions, by whichever path the hub
        offers: `follow` through the intake (a consumer the hub makes, delivering into this
        cluster's inbox), or a consumer of its own it pulls from."""
        if not await self.has_intake():
            return accepted(await self.create_consumer()) and bool(await self.pulled_own(timeout))
        deliveries = await self.listen(f"{inbox_prefix(self.cluster_id)}.descriptions")
        await self.settle()
        reply = await self.intake("follow", b"{}", timeout=timeout)
        if reply is not None and not reply.get("code"):
            try:
                await eventually(lambda: any(not (m.headers or {}).get("Status") for m in deliveries), timeout)
            except TimeoutError:
                return False
            return True
        return accepted(await self.create_consumer()) and bool(await self.pulled_own(timeout))

    async def read_own(self, bucket: str, key: str, timeout: float = 5.0) -> bytes | None:
        """Reads one of its own keys by whichever path the hub offers: a direct get, or `get`
        through the intake (the record's JSON text)."""
        if not await self.has_intake():
            msg = await self.direct_get(bucket, key, timeout)
            return None if msg is None else bytes(msg.data)
        reply = await self.intake("get", b"", {INTAKE_BUCKET: bucket, INTAKE_KEY: key}, timeout=timeout)
        if reply is not None and reply.get("value") is not None:
            return str(reply["value"]).encode()
        return None

    # -- writes, through every path a cluster has or had -----------------------------------------

    async def intake(
        self,
        verb: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        namespace: str | None = None,
        timeout: float = 3.0,
    ) -> dict[str, Any] | None:
        """A request to the hub's intake (hardened writes); None when refused or unanswered."""
        subject = intake_subject(namespace or self.namespace, verb)
        msg = await self.ask(subject, body, headers or None, timeout=timeout)
        return None if msg is None else json.loads(msg.data or b"{}")

    async def has_intake(self) -> bool:
        """Whether the hub answers this cluster's intake at all (today's hub has none)."""
        if self.intake_answers is None:
            self.intake_answers = await self.intake("event", b"{}") is not None
        return self.intake_answers

    async def store(
        self,
        bucket: str,
        key: str,
        body: bytes,
        headers: dict[str, str] | None = None,
        revision: int = 0,
        timeout: float = 3.0,
    ) -> list[Any]:
        """Tries to write `key` of `bucket` with extra `headers` on every path: a publish into the
        stream (`$KV...`), the domain path (`$JS.hub.API.$KV...`), and the intake. Returns the
        answers that came (pub acks, errors, intake replies)."""
        intake_headers = {**(headers or {}), INTAKE_BUCKET: bucket, INTAKE_KEY: key, INTAKE_REVISION: str(revision)}
        published = [
            self.ask(s, body, headers or None) for s in (f"$KV.{bucket}.{key}", f"{DOMAIN_API}.$KV.{bucket}.{key}")
        ]
        *acks, reply = await asyncio.gather(*published, self.intake("put", body, intake_headers, timeout=timeout))
        answers: list[Any] = [json.loads(m.data or b"{}") for m in acks if m is not None]
        return [*answers, reply] if reply is not None else answers


async def registered(hub: RegistrationHub) -> Attacker:
    """A freshly registered cluster, connected with its own credential."""
    cluster_id = new_cluster_id()
    reply, secret = await register(hub.secure.server.url, cluster_id, await hub.token())
    assert reply.result == APPROVED and reply.dedicated_namespace, reply
    conn = await connect(hub.secure.server.url, cluster_id, secret, inbox_prefix(cluster_id))
    return Attacker(conn.nc, conn.errors, cluster_id, reply.dedicated_namespace, secret)


async def token_holder(url: str, cluster_id: str, token: str) -> Connection | None:
    """Connects with a bootstrap token as `cluster_id`; None when the server refuses."""
    try:
        return await connect(url, cluster_id, token, registering_inbox_prefix(cluster_id))
    except Exception:
        return None


# -- the hub's view (test-only: the attacker never holds these) -------------------------------


async def put_description(hub: RegistrationHub, namespace: str, name: str, *configmaps: str) -> str:
    """The hub side writes a Description for `namespace` deploying ConfigMaps; returns its key."""
    raw = [
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": cm, "namespace": "default"},
                "data": {"owner": namespace},
            }
        ).encode()
        for cm in configmaps
    ]
    spec = DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw)
    descriptions: ObjectStore[Description] = ObjectStore(hub.nc.jetstream(), by_kind("Description"))
    await descriptions.create(Description.new(name, namespace, spec=spec))
    return f"{namespace}.{name}"


async def record(hub: RegistrationHub, bucket: str, key: str) -> tuple[bytes, int] | None:
    """A key's value and revision as the hub reads it, or None."""
    kv = await hub.nc.jetstream().key_value(bucket)
    try:
        entry = await kv.get(key)
    except Exception:
        return None
    if entry.value is None or entry.operation is not None:
        return None
    return entry.value, int(entry.revision or 0)


async def seed_records(
    hub: RegistrationHub, namespace: str, buckets: tuple[str, ...] = ALL_CLUSTER_BUCKETS, name: str = "precious"
) -> dict[tuple[str, str], tuple[bytes, int]]:
    """The hub writes one record for `namespace` in each bucket; returns them as stored."""
    js = hub.nc.jetstream()
    out: dict[tuple[str, str], tuple[bytes, int]] = {}
    for bucket in buckets:
        kv = await js.key_value(bucket)
        key, value = f"{namespace}.{name}", json.dumps({"owner": namespace, "bucket": bucket}).encode()
        out[(bucket, key)] = (value, int(await kv.put(key, value)))
    return out


async def unchanged(
    hub: RegistrationHub, seeded: dict[tuple[str, str], tuple[bytes, int]]
) -> dict[tuple[str, str], Any]:
    """Seeded records that are gone or changed (empty: all intact)."""
    changed: dict[tuple[str, str], Any] = {}
    for (bucket, key), stored in seeded.items():
        now = await record(hub, bucket, key)
        if now != stored:
            changed[(bucket, key)] = now
    return changed


async def delivered(hub: RegistrationHub, stream: str, consumer: str, timeout: float = 5.0) -> bool:
    """Whether the consumer delivered something within `timeout` (the hub's view); False when it
    never delivered or does not exist (the attacker's create was refused)."""

    js = hub.nc.jetstream()
    try:
        await js.consumer_info(stream, consumer)
    except Exception:
        return False  # the attacker's consumer was never made

    async def check() -> bool:
        try:
            info = await js.consumer_info(stream, consumer)
        except Exception:
            return False
        return int(info.delivered.consumer_seq or 0) > 0

    try:
        await eventually(check, timeout=timeout, interval=0.1)
    except TimeoutError:
        return False
    return True


async def stream_bytes(hub: RegistrationHub, stream: str) -> int:
    return int((await hub.nc.jetstream().stream_info(stream)).state.bytes or 0)


async def stream_messages(hub: RegistrationHub, stream: str, subjects: str = ">") -> dict[str, int]:
    """Subjects stored in `stream` (matching `subjects`) and their message counts, as the hub sees."""
    info = await hub.nc.jetstream().stream_info(stream, subjects_filter=subjects)
    return dict(info.state.subjects or {})


# -- the system account: how the tests leak secrets to the attacker ---------------------------


async def system_request(hub: RegistrationHub, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    nc = await nats.connect(hub.secure.url("sys"))
    try:
        msg = await nc.request(subject, json.dumps(body).encode(), timeout=5)
        data: dict[str, Any] = json.loads(msg.data)["data"]
        return data
    finally:
        await nc.close()


async def subscriptions(hub: RegistrationHub, connection_name: str) -> list[str]:
    """Subjects the named client connection subscribes to (CONNZ with subscription details)."""
    data = await system_request(hub, "$SYS.REQ.SERVER.PING.CONNZ", {"subscriptions_detail": True, "limit": 10000})
    return [
        sub["subject"]
        for conn in data.get("connections") or []
        if conn.get("name") == connection_name
        for sub in conn.get("subscriptions_list_detail") or []
    ]


async def leaf_subscriptions(hub: RegistrationHub) -> list[str]:
    """Subjects the hub's leaf-node connections have interest in (LEAFZ with subscriptions)."""
    data = await system_request(hub, "$SYS.REQ.SERVER.PING.LEAFZ", {"subscriptions": True})
    return [sub for leaf in data.get("leafs") or [] for sub in leaf.get("subscriptions_list") or []]


async def leaked_pull_inbox(hub: RegistrationHub, connection_name: str, cluster_id: str) -> str:
    """The victim's pull inbox (`_INBOX_<id>.<token>`: one token, no wildcard), as if it leaked."""

    async def find() -> str | None:
        for subject in await subscriptions(hub, connection_name):
            rest = subject.removeprefix(f"{inbox_prefix(cluster_id)}.")
            if rest != subject and "." not in rest and "*" not in rest and ">" not in rest:
                return subject
        return None

    found: str = await eventually(find, timeout=20, interval=0.2, what=f"{connection_name}'s pull inbox")
    return found


async def consumers(hub: RegistrationHub, stream: str | None = FOLLOWED_STREAM) -> dict[str, str]:
    """Every consumer of `stream` (None: of every stream, as `<stream>/<name>`) and its filter,
    as JSZ reports them (the hub's view)."""
    data = await system_request(
        hub, "$SYS.REQ.SERVER.PING.JSZ", {"accounts": True, "streams": True, "consumer": True, "config": True}
    )
    out: dict[str, str] = {}
    for account in data.get("account_details") or []:
        for info in account.get("stream_detail") or []:
            if stream is not None and info.get("name") != stream:
                continue
            for consumer in info.get("consumer_detail") or []:
                cfg = consumer.get("config") or {}
                out[consumer["name"] if stream else f"{info.get('name')}/{consumer['name']}"] = cfg.get(
                    "filter_subject"
                ) or ",".join(cfg.get("filter_subjects") or [])
    return out


async def victims_consumer(hub: RegistrationHub, namespace: str) -> str:
    """The name of the consumer following `namespace`'s Descriptions, as if it leaked."""

    async def find() -> str | None:
        for name, subject_filter in (await consumers(hub)).items():
            if subject_filter == f"$KV.{FOLLOWED}.{namespace}.>":
                return name
        return None

    found: str = await eventually(find, timeout=20, interval=0.2, what=f"{namespace}'s consumer")
    return found


# -- a real agent as the victim ----------------------------------------------------------------


@dataclass
class Victim:
    """Cluster B as a real agent process (sim backend), observed from outside."""

    hub: RegistrationHub
    name: str
    cluster_id: str
    namespace: str
    state_dir: Path

    @property
    def connection_name(self) -> str:
        return f"clusternet-agent/{self.name}"

    def applied(self) -> dict[str, str]:
        """`Kind/namespace/name` -> owning Description key, of every object its simulated cluster
        holds that a Description applied (read from the persisted sim state)."""
        state = saved_states(self.state_dir).get(self.name)
        if state is None:
            return {}
        out: dict[str, str] = {}
        for item in state.get("objects") or []:
            _, kind, namespace, name = item["ref"]
            labels = (item.get("body") or {}).get("metadata", {}).get("labels") or {}
            owner = labels.get("apps.clusternet.io/description")
            if owner:
                out[f"{kind}/{namespace}/{name}"] = owner
        return out

    async def reported(self, name: str) -> str | None:
        """The phase it reported for its Description `name`."""
        found = await record(self.hub, "descriptions-status", f"{self.namespace}.{name}")
        return None if found is None else json.loads(found[0]).get("phase")

    async def applies(self, name: str, configmap: str, timeout: float = 30.0) -> None:
        """B keeps working: a new Description for it is applied and reported Success in time."""
        key = await put_description(self.hub, self.namespace, name, configmap)

        async def done() -> bool:
            applied = self.applied().get(f"ConfigMap/default/{configmap}") == key
            return applied and await self.reported(name) == "Success"

        await eventually(done, timeout=timeout, interval=0.1, what=f"victim applies and reports {key}")


@contextlib.asynccontextmanager
async def victim_agent(
    hub: RegistrationHub, directory: Path, *args: str, name: str = "victim"
) -> AsyncIterator[Victim]:
    """B as a REAL agent process in registration mode, connected straight to the hub."""
    state = directory / "victim-state"
    async with running_agent(hub, state, "--nats-url", hub.secure.server.url, "--cluster-name", name, *args):
        saved = saved_credentials(state)[name]
        assert saved.namespace is not None
        yield Victim(hub, name, saved.cluster_id, saved.namespace, state)

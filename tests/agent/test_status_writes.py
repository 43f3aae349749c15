"""How the agent writes Description status: CAS on what it last wrote, with no read before each write."""

from __future__ import annotations

import json
import uuid
from typing import Any

import nats
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.apps import DeployerType, Description, DescriptionPhase, DescriptionSpec, DescriptionStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.msg import Msg
from nats.js import JetStreamContext

BUCKET = "descriptions-status"
CONFIGMAP: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default"}}


def configmaps_description(name: str, namespace: str, *names: str) -> Description:
    objects = [{**CONFIGMAP, "metadata": {**CONFIGMAP["metadata"], "name": n}} for n in names]
    spec = DescriptionSpec(deployer=DeployerType.GENERIC, raw=[json.dumps(obj).encode() for obj in objects])
    return Description.new(name, namespace, spec=spec)


async def test_statuses_are_written_without_reading_them_back_and_a_foreign_write_is_caught(
    nats_server: NatsServer, js: JetStreamContext
) -> None:
    agent = Agent(AgentOptions(cluster_name=f"w{uuid.uuid4().hex[:8]}", sim_clusters=3))
    descriptions: ObjectStore[Description] = ObjectStore(js, by_kind("Description"))
    statuses = StatusStore(js, BUCKET, DescriptionStatus)
    namespaces = {cluster.identity.namespace for cluster in agent.clusters}
    reads: list[str] = []

    async def on_read(msg: Msg) -> None:
        """A status read, by direct get (key in the subject) or by message get (key in the body)."""
        subject = msg.subject.rsplit(f"$KV.{BUCKET}.", 1)[-1] if "DIRECT" in msg.subject else ""
        if not subject and msg.data:
            subject = str(json.loads(msg.data).get("last_by_subj", "")).removeprefix(f"$KV.{BUCKET}.")
        if subject.split(".", 1)[0] in namespaces:
            reads.append(subject)

    spy = await nats.connect(nats_server.url)
    await spy.subscribe(f"$JS.API.DIRECT.GET.KV_{BUCKET}.>", cb=on_read)
    await spy.subscribe(f"$JS.API.STREAM.MSG.GET.KV_{BUCKET}", cb=on_read)
    await barrier(spy)
    try:
        async with running_service("agent", agent.build, nats_server.url):
            created = [
                await descriptions.create(configmaps_description(f"d{i}", cluster.identity.namespace, "one"))
                for cluster in agent.clusters
                for i in range(2)
            ]
            keys = [descriptions.key_of(desc) for desc in created]

            async def phases() -> dict[str, DescriptionStatus]:
                """Every status in these clusters, read by a consumer (not a get, which would count)."""
                found = [
                    (key, statuses.decode(data))
                    for namespace in namespaces
                    for key, data, _ in await statuses.bucket.entries(f"{namespace}.>")
                ]
                return dict(found)

            async def all_success() -> bool:
                found = await phases()
                return sorted(found) == sorted(keys) and all(
                    s.phase is DescriptionPhase.SUCCESS for s in found.values()
                )

            await eventually(all_success, 15, what="every Description Success")
            await barrier(spy)
            assert reads == [], "a status is written on the revision last written, never read back first"

            # Someone else overwrites one status; the Description changes (one more object, so a
            # new status): the agent's write conflicts, reads the key, and writes on that.
            key, desc = keys[0], created[0]
            revision = next(rev for k, _, rev in await statuses.bucket.entries(key) if k == key)
            await statuses.put(key, DescriptionStatus(phase=DescriptionPhase.PENDING, reason="foreign"), revision)
            desc.spec.raw = configmaps_description(desc.name, desc.namespace, "one", "two").spec.raw
            await descriptions.update(desc)

            async def rewritten() -> bool:
                value = (await phases()).get(key)
                done = value is not None and value.phase is DescriptionPhase.SUCCESS
                return done and value is not None and len(value.manifest_statuses or []) == 2

            await eventually(rewritten, 15, what="the status written again after the conflict")
            await barrier(spy)
            assert reads == [key], "only the key whose CAS failed is read"
    finally:
        await spy.close()

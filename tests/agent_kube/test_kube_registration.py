"""`--backend kube --bootstrap-token`: the agent registers its real cluster under the cluster's own id.

A real kube-apiserver and the secured hub (auth callout): the agent process reads the id from the
cluster (the Lease uid, as Clusternet's agent does) before filing its ClusterRegistrationRequest,
so the ManagedCluster the hub creates carries that id, and a Description in its namespace is
applied in the real cluster by the registered agent.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from clusternet_nats.api.apps import DeployerType, Description, DescriptionSpec
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.waiting import eventually

from tests.agent_kube.test_kube_backend import kubectl_json
from tests.registration.harness import RegistrationHub, running_agent


async def test_kube_agent_registers_with_the_lease_uid_and_applies_descriptions(
    hub: RegistrationHub, kube_children: list[ControlPlane], tmp_path: Path
) -> None:
    plane = kube_children[1]
    name, config_map = f"kreg-{uuid.uuid4().hex[:6]}", f"registered-{uuid.uuid4().hex[:6]}"
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    descriptions: ObjectStore[Description] = ObjectStore(hub.nc.jetstream(), by_kind("Description"))
    args = (
        *("--nats-url", hub.secure.server.url, "--cluster-name", name),
        *("--backend", "kube", "--kubeconfig", str(plane.kubeconfig)),
    )
    async with running_agent(hub, tmp_path / "state", *args, timeout=60):
        lease = await kubectl_json(plane, "lease", "-n", "clusternet-system", "clusternet-agent")
        assert lease is not None
        [registered] = [c for c in await clusters.list() if c.metadata.name == name]
        assert registered.spec.cluster_id == lease["metadata"]["uid"]

        raw = json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": config_map, "namespace": "default"}}
        ).encode()
        namespace = registered.metadata.namespace or ""
        desc = Description.new("reg-generic", namespace, spec=DescriptionSpec(deployer=DeployerType.GENERIC, raw=[raw]))
        await descriptions.create(desc)
        await eventually(lambda: kubectl_json(plane, "configmap", "-n", "default", config_map), 30, what="applied")

        assert await descriptions.delete(namespace, "reg-generic")
        await eventually(lambda: _gone(plane, config_map), 30, what="pruned once its Description is gone")


async def _gone(plane: ControlPlane, config_map: str) -> bool:
    return await kubectl_json(plane, "configmap", "-n", "default", config_map) is None

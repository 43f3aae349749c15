"""The agent with `--backend kube` against a real kube-apiserver (and kube-controller-manager),
Descriptions in over a real NATS, objects checked with kubectl."""

from __future__ import annotations

import json
import uuid
from typing import Any

from clusternet_nats.agent.backends.kube.ownership import owner_hash
from clusternet_nats.agent.cluster_agent import ClusterAgent, StatusSettings
from clusternet_nats.agent.service import Agent, AgentOptions, Backend
from clusternet_nats.api.apps import DeployerType, Description, DescriptionPhase, DescriptionSpec, DescriptionStatus
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.inventory import NODE_INVENTORIES_BUCKET, NodeInventory
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext


def objects(ns: str, group: str) -> list[dict[str, Any]]:
    """A Namespace, Deployment, Service, ConfigMap, a CRD and an instance of it."""
    labels = {"app": "web"}
    container = {"name": "web", "image": "nginx:1.27"}
    crd_spec = {
        "group": group,
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": ns},
            "spec": {"size": 3},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"selector": labels, "ports": [{"port": 80}]},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": ns},
            "data": {"a": "1"},
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": crd_spec,
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
    ]


async def kubectl_json(plane: ControlPlane, *args: str) -> dict[str, Any] | None:
    """The object as JSON, or None when the API server says it does not exist."""
    result = await plane.kubectl_async("get", *args, "-o", "json")
    if result.returncode != 0:
        assert "NotFound" in result.stderr, result.stderr
        return None
    found: dict[str, Any] = json.loads(result.stdout)
    return found


async def gone_or_terminating(plane: ControlPlane, *args: str) -> bool:
    found = await kubectl_json(plane, *args)
    return found is None or "deletionTimestamp" in found["metadata"]


async def test_descriptions_are_applied_reported_pruned_and_removed_in_a_real_cluster(
    nats_server: NatsServer, js: JetStreamContext, kube_children: list[ControlPlane]
) -> None:
    plane = kube_children[0]
    await plane.start_controller_manager_async()
    suffix = uuid.uuid4().hex[:8]
    ns, group = f"shop-{suffix}", f"k{suffix}.example.com"
    agent = Agent(AgentOptions(cluster_name=f"kube-{suffix}", backend=Backend.KUBE, kubeconfig=plane.kubeconfig))
    descriptions: ObjectStore[Description] = ObjectStore(js, by_kind("Description"))
    statuses = StatusStore(js, "descriptions-status", DescriptionStatus)
    cluster_statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)

    async with running_service("agent", agent.build, nats_server.url):
        cluster: ClusterAgent = await eventually(
            lambda: agent.clusters[0] if agent.clusters and agent.clusters[0].ready else None, 60, what="agent ready"
        )
        # The cluster id is the UID of Clusternet's agent Lease in the child.
        lease = await kubectl_json(plane, "lease", "-n", "clusternet-system", "clusternet-agent")
        assert lease is not None and cluster.identity.cluster_id == lease["metadata"]["uid"]

        ident = cluster.identity
        reported = await eventually(lambda: cluster_statuses.get(f"{ident.namespace}.{ident.name}"), 30, what="status")
        assert reported.value.k8s_version is not None and reported.value.k8s_version.startswith("v1.")
        assert reported.value.platform is not None and "/" in reported.value.platform
        assert reported.value.healthz and reported.value.livez and reported.value.readyz
        assert reported.value.apiserver_url == plane.server

        raw = [json.dumps(obj).encode() for obj in objects(ns, group)]
        desc = Description.new(
            "shop-generic", ident.namespace, spec=DescriptionSpec(deployer=DeployerType.GENERIC, raw=raw)
        )
        key = descriptions.key_of(desc)
        created = await descriptions.create(desc)

        async def deployment_observed() -> DescriptionStatus | None:
            found = await statuses.get(key)
            if found is None or found.value.phase is not DescriptionPhase.SUCCESS:
                return None
            by_kind_ = {m.kind: m for m in found.value.manifest_statuses or []}
            deployment = by_kind_.get("Deployment")
            return found.value if deployment and (deployment.observed_status or {}).get("observedGeneration") else None

        # Status written by kube-controller-manager reaches the Description through the agent's watch.
        status = await eventually(deployment_observed, 60, what="Description Success with Deployment status")
        assert status.manifest_statuses is not None
        assert {m.kind for m in status.manifest_statuses} == {
            "Namespace",
            "CustomResourceDefinition",
            "Deployment",
            "Widget",
            "Service",
            "ConfigMap",
        }
        deployment = await kubectl_json(plane, "deployment", "-n", ns, "web", "--show-managed-fields")
        assert deployment is not None
        assert deployment["metadata"]["labels"][APPLIED_BY_DESCRIPTION] == owner_hash(key)
        assert deployment["metadata"]["annotations"][APPLIED_BY_DESCRIPTION] == key
        managers = {f["manager"] for f in deployment["metadata"]["managedFields"] if f["operation"] == "Apply"}
        assert managers == {"clusternet-agent"}
        widget = await kubectl_json(plane, f"widgets.{group}", "-n", ns, "w1")
        assert widget is not None and widget["spec"] == {"size": 3}

        # A status change nobody asked the agent for (here kubectl's) is reported too.
        ready = json.dumps({"status": {"phase": "Ready"}})
        patched = await plane.kubectl_async("patch", f"widgets.{group}", "-n", ns, "w1", "--type=merge", "-p", ready)
        assert patched.returncode == 0, patched.stderr

        async def widget_reported() -> bool:
            found = await statuses.get(key)
            manifests = (found.value.manifest_statuses or []) if found else []
            return any(m.kind == "Widget" and m.observed_status == {"phase": "Ready"} for m in manifests)

        await eventually(widget_reported, 30, what="the Widget's new status in the Description's")

        # Dropping the ConfigMap and the Widget from the Description prunes exactly those.
        kept = [obj for obj in objects(ns, group) if obj["kind"] not in ("ConfigMap", "Widget")]
        created.spec.raw = [json.dumps(obj).encode() for obj in kept]
        await descriptions.update(created)
        await eventually(lambda: gone_or_terminating(plane, "configmap", "-n", ns, "settings"), 30, what="pruned")
        await eventually(lambda: gone_or_terminating(plane, f"widgets.{group}", "-n", ns, "w1"), 30, what="pruned")
        assert await kubectl_json(plane, "service", "-n", ns, "web") is not None
        assert await kubectl_json(plane, "deployment", "-n", ns, "web") is not None

        # Deleting the Description deletes everything it applied, and its record.
        await descriptions.delete(desc.namespace, desc.name)
        await eventually(lambda: gone_or_terminating(plane, "namespace", ns), 30, what="namespace deleted")
        await eventually(lambda: gone_or_terminating(plane, "crd", f"widgets.{group}"), 30, what="CRD deleted")
        await eventually(lambda: _absent(statuses, key), 30, what="status removed")
        assert key not in await cluster.backend.owners()


async def _absent(statuses: StatusStore[DescriptionStatus], key: str) -> bool:
    return await statuses.get(key) is None


async def test_a_restarted_agent_keeps_its_cluster_id_and_prunes_descriptions_deleted_meanwhile(
    nats_server: NatsServer, js: JetStreamContext, kube_children: list[ControlPlane]
) -> None:
    plane = kube_children[1]
    suffix = uuid.uuid4().hex[:8]
    options = AgentOptions(cluster_name=f"kube-{suffix}", backend=Backend.KUBE, kubeconfig=plane.kubeconfig)
    descriptions: ObjectStore[Description] = ObjectStore(js, by_kind("Description"))
    statuses = StatusStore(js, "descriptions-status", DescriptionStatus)

    def configmap(name: str) -> bytes:
        return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).encode()

    first = Agent(options)
    async with running_service("agent", first.build, nats_server.url):
        cluster = await eventually(lambda: first.clusters[0] if first.clusters else None, 60, what="agent")
        namespace, cluster_id = cluster.identity.namespace, cluster.identity.cluster_id
        spec = DescriptionSpec(deployer=DeployerType.GENERIC, raw=[configmap(f"gone-{suffix}")])
        gone = await descriptions.create(Description.new(f"gone-{suffix}", namespace, spec=spec))
        spec = DescriptionSpec(deployer=DeployerType.GENERIC, raw=[configmap(f"kept-{suffix}")])
        kept = await descriptions.create(Description.new(f"kept-{suffix}", namespace, spec=spec))

        async def both_applied() -> bool:
            found = [await statuses.get(descriptions.key_of(d)) for d in (gone, kept)]
            return all(f is not None and f.value.phase is DescriptionPhase.SUCCESS for f in found)

        await eventually(both_applied, 30, what="both Descriptions Success")
        uid = (await kubectl_json(plane, "configmap", "-n", "default", f"kept-{suffix}") or {})["metadata"]["uid"]

    await descriptions.delete(gone.namespace, gone.name)
    second = Agent(options)
    async with running_service("agent", second.build, nats_server.url):
        await eventually(
            lambda: gone_or_terminating(plane, "configmap", "-n", "default", f"gone-{suffix}"), 30, what="orphan pruned"
        )
        assert second.clusters[0].identity.cluster_id == cluster_id
        survivor = await kubectl_json(plane, "configmap", "-n", "default", f"kept-{suffix}")
        assert survivor is not None and survivor["metadata"]["uid"] == uid
        await descriptions.delete(kept.namespace, kept.name)
        await eventually(
            lambda: gone_or_terminating(plane, "configmap", "-n", "default", f"kept-{suffix}"), 30, what="removed"
        )


def node(name: str, ready: str, cpu: str, memory: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Node object and the status a kubelet would give it."""
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"node.clusternet.io/zone": "a"}}}
    condition = {"type": "Ready", "status": ready, "reason": "Test", "message": "set by the test"}
    return body, {"status": {"capacity": resources, "allocatable": resources, "conditions": [condition]}}


async def test_heartbeats_report_the_clusters_nodes_pods_and_node_inventory(
    nats_server: NatsServer, js: JetStreamContext, kube_children: list[ControlPlane]
) -> None:
    plane = kube_children[1]
    suffix = uuid.uuid4().hex[:8]
    ns, ready_node, broken_node = f"pods-{suffix}", f"ready-{suffix}", f"broken-{suffix}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns},
        "spec": {
            "nodeName": ready_node,
            "automountServiceAccountToken": False,
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}
            ],
        },
    }
    try:
        for name, ready, cpu, memory in ((ready_node, "True", "4", "8Gi"), (broken_node, "False", "2", "4Gi")):
            body, status = node(name, ready, cpu, memory)
            created = await plane.kubectl_async("create", "-f", "-", input=json.dumps(body))
            assert created.returncode == 0, created.stderr
            patched = await plane.kubectl_async(
                "patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status)
            )
            assert patched.returncode == 0, patched.stderr
        for args in (("create", "namespace", ns), ("create", "serviceaccount", "default", "-n", ns)):
            made = await plane.kubectl_async(*args)
            assert made.returncode == 0, made.stderr
        made = await plane.kubectl_async("create", "-f", "-", input=json.dumps(pod))
        assert made.returncode == 0, made.stderr

        options = AgentOptions(
            cluster_name=f"kube-{suffix}",
            backend=Backend.KUBE,
            kubeconfig=plane.kubeconfig,
            report_frequency=1.0,
            status=StatusSettings(collect_frequency=0.2),
        )
        agent = Agent(options)
        statuses = StatusStore(js, "managedclusters-status", ManagedClusterStatus)
        inventories = StatusStore(js, NODE_INVENTORIES_BUCKET, NodeInventory)
        async with running_service("agent", agent.build, nats_server.url):
            cluster = await eventually(lambda: agent.clusters[0] if agent.clusters else None, 60, what="agent")
            key = f"{cluster.identity.namespace}.{cluster.identity.name}"

            async def reported() -> ManagedClusterStatus | None:
                found = await statuses.get(key)
                stats = found.value.node_statistics if found else None
                return found.value if found and stats and stats.ready_nodes == 1 else None

            status = await eventually(reported, 30, what="node statistics")
            assert status.node_statistics is not None
            assert (status.node_statistics.not_ready_nodes, status.node_statistics.unknown_nodes) == (1, 0)
            assert status.capacity == {"cpu": "6", "memory": "12Gi", "pods": "220"}
            assert status.allocatable == status.capacity
            assert status.pod_statistics is not None and status.pod_statistics.total_pods >= 1
            inventory = await eventually(lambda: inventories.get(key), 30, what="node inventory")
            nodes = {n.name: n for n in inventory.value.nodes}
            assert inventory.value.cluster_id == cluster.identity.cluster_id
            assert nodes[ready_node].ready and not nodes[broken_node].ready
            assert nodes[ready_node].requested == {"cpu": "500m", "memory": "256Mi", "pods": "1"}
            assert nodes[ready_node].allocatable == {"cpu": "4", "memory": "8Gi", "pods": "110"}
            assert nodes[broken_node].requested == {}
    finally:
        await plane.kubectl_async("delete", "node", ready_node, broken_node, "--ignore-not-found")
        await plane.kubectl_async("delete", "namespace", ns, "--ignore-not-found", "--wait=false")

"""Real control planes from the fixtures: etcd + kube-apiserver answer kubectl, and with
kube-controller-manager a Deployment gets its ReplicaSet."""

from __future__ import annotations

import json
from typing import Any

from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.waiting import eventually

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
        },
    },
}


async def test_kubectl_lists_the_initial_namespaces(kube_parent: ControlPlane) -> None:
    result = await kube_parent.kubectl_async("get", "ns", "-o", "name")
    assert result.returncode == 0, result.stderr
    assert {"namespace/default", "namespace/kube-system"} <= set(result.stdout.split())
    assert kube_parent.server.startswith("https://127.0.0.1:")


async def test_children_are_separate_clusters(kube_children: list[ControlPlane]) -> None:
    first, second = kube_children
    assert first.server != second.server
    created = await first.kubectl_async("create", "namespace", "only-in-child-1")
    assert created.returncode == 0, created.stderr
    missing = await second.kubectl_async("get", "namespace", "only-in-child-1")
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr


async def test_deployment_gets_a_replicaset_from_the_controller_manager(kube_parent: ControlPlane) -> None:
    await kube_parent.start_controller_manager_async()
    applied = await kube_parent.kubectl_async("apply", "-f", "-", input=json.dumps(DEPLOYMENT))
    assert applied.returncode == 0, applied.stderr

    async def replicaset() -> dict[str, Any] | None:
        listed = await kube_parent.kubectl_async("get", "rs", "-n", "default", "-l", "app=web", "-o", "json")
        items = json.loads(listed.stdout)["items"] if listed.returncode == 0 else []
        return items[0] if items else None

    rs = await eventually(replicaset, 60, what="a ReplicaSet owned by Deployment web")
    owners = rs["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"]) for o in owners] == [("Deployment", "web")]
    assert rs["spec"]["replicas"] == 2

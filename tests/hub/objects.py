"""Request bodies the hub tests send."""

from __future__ import annotations

from typing import Any

UNAUTHORIZED = {
    "apiVersion": "v1",
    "kind": "Status",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}
"""kube-apiserver's answer to a request without valid credentials, byte for byte."""
APPS = "/apis/apps.clusternet.io/v1alpha1"


def subs_path(namespace: str, name: str = "") -> str:
    path = f"{APPS}/namespaces/{namespace}/subscriptions"
    return f"{path}/{name}" if name else path


def subscription(namespace: str, name: str = "demo", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "subscribers": [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}],
            "feeds": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": namespace}],
        },
    }
    body["spec"].update(spec)
    return body


def deployment(namespace: str, name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }

"""deploy/k8s on a real apiserver: both kustomizations build and pass server-side validation,
and the agent's RBAC grants what applying Descriptions needs and nothing that grants more."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bridge.conftest import Parent

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
AGENT = "system:serviceaccount:clusternet-system:clusternet-agent"
BRIDGE = "system:serviceaccount:clusternet-system:clusternet-bridge"


@pytest.fixture(scope="module")
async def installed(parent: Parent) -> Parent:
    """The child's kustomization and the bridge applied for real (RBAC is what is tested; no kubelet
    runs anything)."""
    await parent.plane.kubectl_async("create", "namespace", "clusternet-system")
    await parent.kubectl("apply", "-k", str(DEPLOY / "child"))
    await parent.kubectl("apply", "-n", "clusternet-system", "-f", str(DEPLOY / "parent" / "bridge.yaml"))
    return parent


async def test_parent_kustomization_passes_server_side_validation(installed: Parent) -> None:
    built = await installed.kubectl("kustomize", str(DEPLOY / "parent"))
    out = await installed.kubectl("apply", "--dry-run=server", "-f", "-", input=built)
    for kind in ("statefulset.apps/nats", "deployment.apps/clusternet-hub", "deployment.apps/clusternet-bridge"):
        assert kind in out
    assert "customresourcedefinition.apiextensions.k8s.io/subscriptions.apps.clusternet.io" in out


async def _can(parent: Parent, who: str, *what: str) -> bool:
    result = await parent.plane.kubectl_async("auth", "can-i", *what, "--as", who)
    return result.stdout.strip() == "yes"


@pytest.mark.parametrize(
    "what",
    [
        ("create", "deployments.apps", "-n", "any"),
        ("patch", "services", "-n", "any"),
        ("delete", "configmaps", "-n", "any"),
        ("create", "namespaces"),
        ("patch", "customresourcedefinitions.apiextensions.k8s.io"),
        ("list", "nodes"),
        ("create", "leases.coordination.k8s.io", "-n", "clusternet-system"),
    ],
)
async def test_agent_may_apply_descriptions(installed: Parent, what: tuple[str, ...]) -> None:
    assert await _can(installed, AGENT, *what)


@pytest.mark.parametrize(
    "what",
    [
        ("create", "clusterrolebindings.rbac.authorization.k8s.io"),
        ("escalate", "clusterroles.rbac.authorization.k8s.io"),
        ("impersonate", "users"),
        ("create", "pods/exec", "-n", "any"),
        ("delete", "nodes"),
        ("deletecollection", "secrets", "-n", "any"),
        ("create", "leases.coordination.k8s.io", "-n", "kube-system"),
        ("create", "subscriptions.apps.clusternet.io", "-n", "any"),
    ],
)
async def test_agent_may_not_do_more(installed: Parent, what: tuple[str, ...]) -> None:
    assert not await _can(installed, AGENT, *what)


@pytest.mark.parametrize(
    ("allowed", "what"),
    [
        (True, ("watch", "deployments.apps", "-A")),  # any feed
        (True, ("patch", "subscriptions.apps.clusternet.io", "-n", "any")),  # the finalizer
        (True, ("update", "subscriptions.apps.clusternet.io", "-n", "any", "--subresource", "status")),
        (True, ("create", "descriptions.apps.clusternet.io", "-n", "any")),
        (True, ("update", "managedclusters.clusters.clusternet.io", "-n", "any", "--subresource", "status")),
        (True, ("create", "events", "-n", "any")),
        (False, ("delete", "subscriptions.apps.clusternet.io", "-n", "any")),
        (False, ("update", "subscriptions.apps.clusternet.io", "-n", "any")),
        (False, ("create", "deployments.apps", "-n", "any")),
        (False, ("delete", "namespaces")),
    ],
)
async def test_bridge_rbac(installed: Parent, allowed: bool, what: tuple[str, ...]) -> None:
    assert await _can(installed, BRIDGE, *what) is allowed

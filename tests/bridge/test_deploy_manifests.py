"""deploy/k8s on a real apiserver: both kustomizations build and pass server-side validation,
and the agent's RBAC grants what applying Descriptions needs and nothing that grants more.
The parent's NATS runs the renderer's configuration, and its secrets come from the init Job's
command, which, with exactly the Job's RBAC, makes the one Secret every manifest names, once."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from clusternet_nats.hub.natsinit import DERIVED, SECRET_NAME, state_keys
from clusternet_nats.runtime import natsconf

from tests.bridge.conftest import Parent
from tests.deploy.shipped import natsinit

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
AGENT = "system:serviceaccount:clusternet-system:clusternet-agent"
BRIDGE = "system:serviceaccount:clusternet-system:clusternet-bridge"
NATS_INIT = "system:serviceaccount:clusternet-system:clusternet-nats-init"


@pytest.fixture(scope="module")
async def installed(parent: Parent) -> Parent:
    """The child's kustomization and the bridge applied for real (RBAC is what is tested; no kubelet
    runs anything)."""
    await parent.plane.kubectl_async("create", "namespace", "clusternet-system")
    await parent.kubectl("apply", "-k", str(DEPLOY / "child"))
    await parent.kubectl("apply", "-n", "clusternet-system", "-f", str(DEPLOY / "parent" / "bridge.yaml"))
    init = yaml.safe_load_all((DEPLOY / "parent" / "natsinit.yaml").read_text())
    rbac = [doc for doc in init if doc["kind"] != "Job"]  # the Job itself is dry-run with the rest
    await parent.kubectl("apply", "-n", "clusternet-system", "-f", "-", input=yaml.safe_dump_all(rbac))
    return parent


async def test_parent_kustomization_passes_server_side_validation(installed: Parent) -> None:
    built = await installed.kubectl("kustomize", str(DEPLOY / "parent"))
    out = await installed.kubectl("apply", "--dry-run=server", "-f", "-", input=built)
    for kind in (
        "statefulset.apps/nats",
        "deployment.apps/clusternet-hub",
        "deployment.apps/clusternet-bridge",
        "job.batch/clusternet-nats-init",
        "role.rbac.authorization.k8s.io/clusternet-nats-init",
    ):
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
        ("impersonate", "userextras/scopes"),  # impersonating users and groups is the proxy's, extras not
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


async def _parent_objects(parent: Parent) -> list[dict[str, Any]]:
    built = await parent.kubectl("kustomize", str(DEPLOY / "parent"))
    return [doc for doc in yaml.safe_load_all(built) if doc]


async def test_parent_nats_runs_the_renderers_configuration(installed: Parent) -> None:
    """The ConfigMap is the renderer's output (drift), the StatefulSet mounts it, and nothing but
    loopback serves monitoring."""
    objects = await _parent_objects(installed)
    config_maps = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("nats-config")]
    assert len(config_maps) == 1
    assert config_maps[0]["data"]["nats.conf"] == natsconf.render(natsconf.KUBERNETES)
    (nats,) = [o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == "nats"]
    volumes = {v["name"]: v for v in nats["spec"]["template"]["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == config_maps[0]["metadata"]["name"]
    services = [o for o in objects if o["kind"] == "Service"]
    assert all(p["port"] != natsconf.KUBERNETES.monitor_port for svc in services for p in svc["spec"]["ports"])


@pytest.mark.parametrize(
    ("allowed", "what"),
    [
        (True, ("get", f"secrets/{SECRET_NAME}", "-n", "clusternet-system")),
        (True, ("update", f"secrets/{SECRET_NAME}", "-n", "clusternet-system")),
        (True, ("create", "secrets", "-n", "clusternet-system")),
        (False, ("get", "secrets/another", "-n", "clusternet-system")),
        (False, ("list", "secrets", "-n", "clusternet-system")),
        (False, ("watch", "secrets", "-n", "clusternet-system")),
        (False, ("delete", f"secrets/{SECRET_NAME}", "-n", "clusternet-system")),
        (False, ("create", "secrets", "-n", "kube-system")),
        (False, ("get", "configmaps", "-n", "clusternet-system")),
    ],
)
async def test_nats_init_rbac(installed: Parent, allowed: bool, what: tuple[str, ...]) -> None:
    assert await _can(installed, NATS_INIT, *what) is allowed


async def _as_init_job(parent: Parent, tmp_path: Path) -> Path:
    """A kubeconfig with the init Job's ServiceAccount token, so the command runs with its RBAC."""
    token = (await parent.kubectl("create", "token", "clusternet-nats-init", "-n", "clusternet-system")).strip()
    admin = yaml.safe_load(parent.plane.kubeconfig.read_text())
    admin["users"] = [{"name": "nats-init", "user": {"token": token}}]
    for context in admin["contexts"]:
        context["context"]["user"] = "nats-init"
    path = tmp_path / "nats-init.kubeconfig"
    path.write_text(yaml.safe_dump(admin))
    return path


async def _run_init(kubeconfig: Path, *extra: str) -> None:
    await natsinit(
        *("--kubernetes-secret", SECRET_NAME, *extra),
        *("--namespace", "clusternet-system", "--kubeconfig", str(kubeconfig)),
    )


def _secret_keys_named(objects: list[dict[str, Any]]) -> set[str]:
    """Every key of the Secret that a manifest's env or volume names."""
    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("secretKeyRef")
            if isinstance(ref, dict) and ref.get("name") == SECRET_NAME:
                keys.add(ref["key"])
            secret = node.get("secret")
            if isinstance(secret, dict) and secret.get("secretName") == SECRET_NAME:
                keys.update(item["key"] for item in secret.get("items") or [])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(objects)
    return keys


async def test_init_job_makes_the_secret_once_with_its_own_rbac(installed: Parent, tmp_path: Path) -> None:
    kubeconfig = await _as_init_job(installed, tmp_path)
    await _run_init(kubeconfig)
    first = await installed.get("secret", SECRET_NAME, "-n", "clusternet-system")
    assert first is not None
    data = {k: base64.b64decode(v) for k, v in first["data"].items()}
    assert set(data) == {*state_keys(), *DERIVED}
    assert _secret_keys_named(await _parent_objects(installed)) <= set(data), "a manifest names a missing key"

    await _run_init(kubeconfig)
    again = await installed.get("secret", SECRET_NAME, "-n", "clusternet-system")
    assert again is not None
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"], "a rerun changed it"

    # Another leaf host: only the leaf certificate is reissued, by the same CA.
    extra = {**json.loads(json.dumps(first["data"]))}
    await _run_init(kubeconfig, "--leaf-host", "hub.example.com")
    changed = await installed.get("secret", SECRET_NAME, "-n", "clusternet-system")
    assert changed is not None
    assert {k for k, v in changed["data"].items() if extra.get(k) != v} == {"leaf.crt", "leaf.key"}

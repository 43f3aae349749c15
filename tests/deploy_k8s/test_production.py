"""deploy/k8s holds in production: applied with server-side apply (dry run) to real
kube-apiservers, NATS as a 3-server JetStream cluster with R3 buckets, every workload with
requests and limits, a restricted securityContext and a PodDisruptionBudget, probes that leave a
registering agent and its leaf alone, and each ServiceAccount allowed what it must do and no more
(`kubectl auth can-i`)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from clusternet_nats.hub import natsinit
from clusternet_nats.hub.natsinit import ROUTES_CONF
from clusternet_nats.runtime import natsconf
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import free_port, nats_server_binary

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
NAMESPACE = "clusternet-system"
WORKLOADS = ("Deployment", "StatefulSet", "Job")
HUB_SIDE = tuple(f"clusternet-{name}" for name in natsconf.SERVICE_USERS)
RBAC = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
APPLY = ("apply", "--server-side", "--force-conflicts")


def sa(name: str) -> str:
    return f"system:serviceaccount:{NAMESPACE}:{name}"


async def kubectl(plane: ControlPlane, *args: str, input: str | None = None) -> str:
    result = await plane.kubectl_async(*args, input=input)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


async def built(plane: ControlPlane, side: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(await kubectl(plane, "kustomize", str(DEPLOY / side))) if doc]


async def server_side_dry_run(plane: ControlPlane, side: str) -> str:
    """The kustomization through server-side apply, dry run, after its Namespace (and, for the
    ServiceAccount checks, its RBAC) exist for real."""
    objects = await built(plane, side)
    text = yaml.safe_dump_all(objects)
    await kubectl(plane, "apply", "-f", str(DEPLOY / side / "namespace.yaml"))
    rbac = [o for o in objects if o["kind"] in RBAC]
    await kubectl(plane, *APPLY, "-f", "-", input=yaml.safe_dump_all(rbac))
    return await kubectl(plane, *APPLY, "--dry-run=server", "-f", "-", input=text)


@pytest.fixture(scope="module")
async def parent(kube_parent: ControlPlane) -> ControlPlane:
    # Our kinds for real, so `can-i` resolves them (as the first apply of the parent would).
    await kubectl(kube_parent, *APPLY, "-k", str(DEPLOY / "crds"))
    await kubectl(kube_parent, "wait", "--for", "condition=established", "--timeout=60s", "crd", "--all")
    out = await server_side_dry_run(kube_parent, "parent")
    for applied in ("statefulset.apps/nats", "poddisruptionbudget.policy/nats", "service/nats-cluster"):
        assert f"{applied} serverside-applied (server dry run)" in out, out
    return kube_parent


@pytest.fixture(scope="module")
async def child(kube_children: list[ControlPlane]) -> ControlPlane:
    out = await server_side_dry_run(kube_children[0], "child")
    assert "deployment.apps/clusternet-agent serverside-applied (server dry run)" in out, out
    return kube_children[0]


def workloads(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in WORKLOADS]


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"])


async def test_every_container_is_restricted_and_sized(parent: ControlPlane, child: ControlPlane) -> None:
    objects = await built(parent, "parent") + await built(child, "child")
    checked = []
    for workload in workloads(objects):
        spec = pod_spec(workload)
        pod = spec.get("securityContext") or {}
        name = f"{workload['kind']}/{workload['metadata']['name']}"
        assert pod.get("runAsNonRoot") is True and pod.get("seccompProfile") == {"type": "RuntimeDefault"}, name
        for container in spec["containers"]:
            where = f"{name} container {container['name']}"
            security = container.get("securityContext") or {}
            assert security.get("allowPrivilegeEscalation") is False, where
            assert security.get("readOnlyRootFilesystem") is True, where
            assert security.get("capabilities") == {"drop": ["ALL"]}, where
            resources = container.get("resources") or {}
            assert resources.get("requests", {}).keys() >= {"cpu", "memory"}, where
            assert "memory" in resources.get("limits", {}), where
            checked.append(where)
    assert len(checked) == 9, checked  # nats, 5 hub-side services, the init Job, agent and leaf


async def test_every_long_running_workload_has_a_disruption_budget(parent: ControlPlane, child: ControlPlane) -> None:
    objects = await built(parent, "parent")
    budgets = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    for workload in workloads(objects):
        if workload["kind"] == "Job":
            continue
        labels = workload["spec"]["template"]["metadata"]["labels"]
        matching = [b for b in budgets if b["spec"]["selector"]["matchLabels"].items() <= labels.items()]
        assert len(matching) == 1, workload["metadata"]["name"]
    (nats,) = [b for b in budgets if b["metadata"]["name"] == "nats"]
    assert nats["spec"]["minAvailable"] == 2, "a drain keeps the quorum of the 3 servers"


async def test_nats_is_a_three_server_jetstream_cluster_with_r3_buckets(parent: ControlPlane) -> None:
    objects = await built(parent, "parent")
    (sts,) = [o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == "nats"]
    assert sts["spec"]["replicas"] == natsconf.NATS_CLUSTER_SIZE == 3
    (headless,) = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == sts["spec"]["serviceName"]]
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
    assert {p["port"] for p in headless["spec"]["ports"]} == {natsconf.KUBERNETES_ROUTES.port}
    pods = [f"nats-{i}.{sts['spec']['serviceName']}.{NAMESPACE}.svc" for i in range(3)]
    assert list(natsconf.KUBERNETES_ROUTES.hosts) == pods, "the routes name the StatefulSet's pods"
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("nats-config")]
    assert config["data"]["nats.conf"] == natsconf.render(natsconf.KUBERNETES)
    assert "server_name: $POD_NAME" in config["data"]["nats.conf"]
    container = pod_spec(sts)["containers"][0]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in container["env"]
    secret = next(v for v in pod_spec(sts)["volumes"] if v["name"] == "secrets")["secret"]
    assert ROUTES_CONF in {item["key"] for item in secret["items"]}
    for workload in workloads(objects):
        if workload["metadata"]["name"] in HUB_SIDE:
            env = {e["name"]: e.get("value") for e in pod_spec(workload)["containers"][0]["env"]}
            assert env.get("CNET_STREAM_REPLICAS") == "3", workload["metadata"]["name"]


def _leaf_probe(objects: list[dict[str, Any]], probe: str) -> list[str]:
    (agent,) = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "clusternet-agent"]
    (leaf,) = [c for c in pod_spec(agent)["containers"] if c["name"] == "leaf"]
    return list(leaf[probe]["exec"]["command"])


@pytest.mark.parametrize("probe", ["startupProbe", "livenessProbe"])
async def test_the_leaf_probes_pass_while_registration_is_pending(
    child: ControlPlane, tmp_path: Path, probe: str
) -> None:
    """Run as written, with the remote's path and the monitoring URL moved to this test's: true
    while there is no remote yet (the agent still registering), then the server's health."""
    command = _leaf_probe(await built(child, "child"), probe)
    remote = tmp_path / "remote.conf"
    nowhere = f"http://127.0.0.1:{free_port()}/healthz"
    local = [
        part.replace("/etc/nats/state/sidecar-leaf/remote.conf", str(remote)).replace(
            "http://127.0.0.1:8222/healthz", nowhere
        )
        for part in command
    ]
    pending = await asyncio.to_thread(subprocess.run, local, check=False)
    assert pending.returncode == 0, "a pending registration must not fail the probe"
    remote.write_text("leafnodes {}\n")
    dead = await asyncio.to_thread(subprocess.run, local, check=False, capture_output=True)
    assert dead.returncode != 0, "a dead server must fail it"


async def test_the_agent_is_not_restarted_while_it_registers(child: ControlPlane) -> None:
    objects = await built(child, "child")
    (agent,) = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "clusternet-agent"]
    (container,) = [c for c in pod_spec(agent)["containers"] if c["name"] == "agent"]
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 24 * 3600, "a day to be approved"


async def can(plane: ControlPlane, who: str, *what: str) -> bool:
    result = await plane.kubectl_async("auth", "can-i", *what, "--as", who)
    return result.stdout.strip() == "yes"


@pytest.mark.parametrize(
    ("allowed", "what"),
    [
        (True, ("watch", "deployments.apps", "-A")),
        (True, ("list", "configmaps", "-A")),
        (True, ("list", "subscriptions.apps.clusternet.io", "-A")),
        (True, ("watch", "managedclusters.clusters.clusternet.io", "-A")),
        (True, ("update", "descriptions.apps.clusternet.io", "-n", "any", "--subresource", "status")),
        (False, ("get", "secrets", "-n", NAMESPACE)),
        (False, ("list", "secrets", "-A")),
        (False, ("get", "secrets/clusternet-nats-secrets", "-n", NAMESPACE)),
        (False, ("list", "pods", "-A")),
        (False, ("create", "deployments.apps", "-n", "any")),
        (False, ("escalate", "clusterroles.rbac.authorization.k8s.io")),
    ],
)
async def test_bridge_reads_the_kinds_it_needs_and_no_secret(
    parent: ControlPlane, allowed: bool, what: tuple[str, ...]
) -> None:
    assert await can(parent, sa("clusternet-bridge"), *what) is allowed


@pytest.mark.parametrize(
    ("allowed", "what"),
    [
        (True, ("create", "deployments.apps", "-n", "any")),
        (True, ("patch", "secrets", "-n", "any")),  # Descriptions may carry Secrets
        (True, ("list", "nodes")),
        (True, ("update", "leases.coordination.k8s.io", "-n", NAMESPACE)),
        (False, ("escalate", "clusterroles.rbac.authorization.k8s.io")),
        (False, ("bind", "clusterroles.rbac.authorization.k8s.io")),
        (False, ("create", "clusterrolebindings.rbac.authorization.k8s.io")),
        (True, ("impersonate", "users")),  # the hub's proxy: the child's RBAC decides as the user
        (True, ("impersonate", "groups")),
        (True, ("impersonate", "serviceaccounts", "-n", "kube-system")),
        (False, ("create", "pods/exec", "-n", "any")),
        (False, ("create", "pods", "-n", "any")),
        (False, ("delete", "nodes")),
        (False, ("update", "leases.coordination.k8s.io", "-n", "kube-system")),
    ],
)
async def test_agent_applies_what_descriptions_carry_and_cannot_escalate(
    child: ControlPlane, allowed: bool, what: tuple[str, ...]
) -> None:
    assert await can(child, sa("clusternet-agent"), *what) is allowed


async def test_the_kubernetes_nats_conf_parses_with_the_init_jobs_secret(tmp_path: Path) -> None:
    """deploy/k8s/parent/nats.conf as committed, beside the keys the init Job puts in the Secret
    (paths moved from /etc/nats to the test's): nats-server accepts it, routes and all."""
    state = tmp_path / "state"
    natsinit.ensure_state(state, [])
    files = {**natsinit.read_state(state), **natsinit.derived(natsinit.read_state(state))}
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    for key in ("auth.conf", ROUTES_CONF, "leaf.crt", "leaf.key"):
        (secrets_dir / key).write_bytes(files[key])
    text = (DEPLOY / "parent" / "nats.conf").read_text()
    assert text == natsconf.render(natsconf.KUBERNETES)
    (tmp_path / "nats.conf").write_text(text.replace(natsconf.SECRETS_DIR, str(secrets_dir)))
    result = await asyncio.to_thread(
        subprocess.run,
        [nats_server_binary(), "-t", "-c", str(tmp_path / "nats.conf")],
        capture_output=True,
        text=True,
        env={"POD_NAME": "nats-0"},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nats-route://route:" in files[ROUTES_CONF].decode()

"""The real kubectl's own way with built-in kinds against the hub: `kubectl apply -f deploy.yaml`
(apps/v1) finds `deployments` in the hub's discovery, and the shadow API stores it as a Manifest
in clusternet-reserved; get, a second apply (kubectl's strategic merge patch, taken as a merge
patch), server-side apply and delete work on it as on a cluster."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from clusternet_nats.api.labels import RESERVED_NAMESPACE
from clusternet_nats.hub.testing import ServedHub

from tests.hub.objects import deployment, subs_path, subscription

from .conftest import EDITOR_NAMESPACE, Kubectl


async def _manifest(served_hub: ServedHub, name: str) -> dict[str, object] | None:
    path = f"/apis/apps.clusternet.io/v1alpha1/namespaces/{RESERVED_NAMESPACE}/manifests/{name}"
    async with served_hub.session() as http, http.get(path) as resp:
        return await resp.json() if resp.status == 200 else None


async def test_apply_get_update_delete_a_deployment(
    kubectl: Kubectl, served_hub: ServedHub, unique_ns: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(deployment(unique_ns, "web")))
    created = await kubectl("apply", "-f", str(manifest))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "deployment.apps/web created"
    stored = await _manifest(served_hub, f"deployments.{unique_ns}.web")
    assert stored is not None
    assert stored["template"]["spec"]["replicas"] == 2  # type: ignore[index]

    listed = await kubectl("get", "deploy.apps", "-n", unique_ns, "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["deployment.apps/web"]
    short = await kubectl("get", "deploy", "-n", unique_ns, "-o", "name")
    assert short.stdout.split() == ["deployment.apps/web"], short.stderr  # kubectl-clusternet's `get deploy -n foo`

    changed = deployment(unique_ns, "web")
    changed["spec"]["replicas"] = 5
    manifest.write_text(yaml.safe_dump(changed))
    updated = await kubectl("apply", "-f", str(manifest))
    assert updated.returncode == 0, updated.stderr
    assert updated.stdout.strip() == "deployment.apps/web configured"
    read = json.loads((await kubectl("get", "deployments.apps", "web", "-n", unique_ns, "-o", "json")).stdout)
    assert read["spec"]["replicas"] == 5
    unchanged = await kubectl("apply", "-f", str(manifest))
    assert unchanged.stdout.strip() == "deployment.apps/web unchanged", unchanged.stderr

    deleted = await kubectl("delete", "-f", str(manifest))
    assert deleted.returncode == 0, deleted.stderr
    assert await _manifest(served_hub, f"deployments.{unique_ns}.web") is None
    gone = await kubectl("get", "deployments.apps", "web", "-n", unique_ns)
    assert gone.returncode == 1 and "not found" in gone.stderr


async def test_configmap_client_and_server_side(
    kubectl: Kubectl, kubectl_editor: Kubectl, served_hub: ServedHub, unique_ns: str, tmp_path: Path
) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": unique_ns}}
    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump({**config, "data": {"a": "1"}}))
    created = await kubectl("apply", "-f", str(path))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "configmap/settings created"
    assert await _manifest(served_hub, f"configmaps.{unique_ns}.settings") is not None

    path.write_text(yaml.safe_dump({**config, "data": {"a": "2", "b": "3"}}))
    applied = await kubectl("apply", "--server-side", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    read = json.loads((await kubectl("get", "cm", "settings", "-n", unique_ns, "-o", "json")).stdout)
    assert read["data"] == {"a": "2", "b": "3"}

    # Authorized as the built-in path says: another namespace's editor may not write it.
    refused = await kubectl_editor("apply", "-f", str(path))
    assert refused.returncode == 1
    assert f'in the namespace "{unique_ns}"' in refused.stderr
    assert EDITOR_NAMESPACE not in refused.stderr

    deleted = await kubectl("delete", "-f", str(path))
    assert deleted.returncode == 0, deleted.stderr
    assert await _manifest(served_hub, f"configmaps.{unique_ns}.settings") is None


async def test_server_side_apply_of_our_kinds_at_the_shadow_path_is_refused(
    served_hub: ServedHub, unique_ns: str
) -> None:
    """Our kinds have their own paths (authorized as what they are); the shadow API never writes them."""
    body = subscription(unique_ns, "s")
    path = f"/apis/shadow/v1alpha1/namespaces/{unique_ns}/subscriptions/s"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    async with served_hub.session() as http, http.patch(path, data=json.dumps(body), headers=headers) as resp:
        assert resp.status == 400, await resp.text()
        assert "served at its own path" in (await resp.json())["message"]
    async with served_hub.session() as http, http.get(subs_path(unique_ns, "s")) as resp:
        assert resp.status == 404


def _containers(*containers: dict[str, object]) -> dict[str, object]:
    body = deployment("placeholder", "multi")
    body["spec"]["template"]["spec"]["containers"] = list(containers)
    return body


async def test_reapply_merges_keyed_lists_as_kubectl_expects(
    kubectl: Kubectl, served_hub: ServedHub, unique_ns: str, tmp_path: Path
) -> None:
    """kubectl's strategic merge patch names list items by key and orders them with
    `$setElementOrder`: the stored object must end up as the file says, with no directive left."""
    app = {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]}
    side = {"name": "side", "image": "side:1", "env": [{"name": "B", "value": "2"}, {"name": "C", "value": "3"}]}
    first = _containers(app, side)
    first["metadata"]["namespace"] = unique_ns
    path = tmp_path / "multi.yaml"
    path.write_text(yaml.safe_dump(first))
    assert (await kubectl("apply", "-f", str(path))).returncode == 0
    new_side = {"name": "side", "image": "side:2", "env": [{"name": "C", "value": "3"}]}
    extra = {"name": "extra", "image": "extra:1"}
    second = _containers(extra, {**app, "image": "app:2"}, new_side)
    second["metadata"]["namespace"] = unique_ns
    path.write_text(yaml.safe_dump(second))
    updated = await kubectl("apply", "-f", str(path))
    assert updated.returncode == 0, updated.stderr
    read = json.loads((await kubectl("get", "deployments.apps", "multi", "-n", unique_ns, "-o", "json")).stdout)
    assert read["spec"] == second["spec"]
    assert "$" not in json.dumps(read)

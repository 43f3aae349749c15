"""From `cnet apply` to objects running in simulated child clusters, through real processes."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually

from .conftest import APPS, CLUSTERS, REPO, HubClient, child_objects, cnet, owned_by

APP_OBJECTS = {
    ("Namespace", "", "foo"),
    ("Deployment", "foo", "my-nginx"),
    ("Service", "foo", "my-nginx-svc"),
}

SUB = f"{APPS}/namespaces/default/subscriptions/app-demo"


async def prod_clusters(hub: HubClient) -> list[str]:
    mcls = await hub.items(f"{CLUSTERS}/managedclusters")
    return sorted(
        f"{m['metadata']['namespace']}/{m['metadata']['name']}"
        for m in mcls
        if m["metadata"]["labels"].get("env") == "prod"
    )


def deployment_status(sub: dict[str, Any]) -> dict[str, Any] | None:
    for agg in (sub.get("status") or {}).get("aggregatedStatuses") or []:
        if agg["kind"] == "Deployment" and agg["name"] == "my-nginx":
            return dict(agg)
    return None


async def test_three_simulated_clusters_register_with_their_labels(hub: HubClient) -> None:
    mcls = await eventually(lambda: _all_clusters(hub), 30, what="3 ManagedClusters")
    envs = sorted(m["metadata"]["labels"]["env"] for m in mcls)
    assert envs == ["prod", "prod", "staging"]
    for m in mcls:
        assert m["metadata"]["namespace"].startswith("clusternet-")
        assert m["metadata"]["labels"]["clusters.clusternet.io/cluster-id"] == m["spec"]["clusterId"]


async def _all_clusters(hub: HubClient) -> list[dict[str, Any]] | None:
    mcls = await hub.items(f"{CLUSTERS}/managedclusters")
    return mcls if len(mcls) == 3 else None


async def test_replication_rolls_out_to_matching_clusters_only(system: System, hub: HubClient) -> None:
    result = cnet(system, "apply", "-f", str(REPO / "examples" / "replication"))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "subscription.apps.clusternet.io/app-demo" in result.stdout

    async def completed() -> dict[str, Any] | None:
        sub = await hub.get(SUB)
        status = (sub or {}).get("status") or {}
        return sub if status.get("desiredReleases") == 2 and status.get("completedReleases") == 2 else None

    sub = await eventually(completed, 60, what="2/2 releases completed")
    assert sub["status"]["bindingClusters"] == await prod_clusters(hub)
    descs = await hub.items(f"{APPS}/descriptions")
    mine = [d for d in descs if d["metadata"]["labels"].get("apps.clusternet.io/subs.name") == "app-demo"]
    assert sorted(d["metadata"]["namespace"] for d in mine) == [c.split("/")[0] for c in await prod_clusters(hub)]
    assert all(d["spec"]["deployer"] == "Generic" and d["status"]["phase"] == "Success" for d in mine)
    assert all(len(d["spec"]["raw"]) == 3 for d in mine)

    agg = await eventually(lambda: _ready_deployment(hub), 30, what="aggregated Deployment status")
    assert agg["feedStatusSummary"]["replicaStatus"]["readyReplicas"] == 6
    assert len(agg["feedStatusDetails"]) == 2

    mcls = await hub.items(f"{CLUSTERS}/managedclusters")
    for mc in mcls:
        name, env = mc["metadata"]["name"], mc["metadata"]["labels"]["env"]
        if env == "prod":
            await eventually(lambda n=name: child_objects(system, n) >= APP_OBJECTS, 10, what=f"objects in {name}")
        else:
            assert not APP_OBJECTS & child_objects(system, name), f"{name} is staging and must get nothing"


async def _ready_deployment(hub: HubClient) -> dict[str, Any] | None:
    agg = deployment_status(await hub.get(SUB) or {})
    if agg and agg["feedStatusSummary"].get("replicaStatus", {}).get("readyReplicas") == 6:
        return agg
    return None


async def test_invalid_input_is_rejected_and_changes_nothing(system: System, hub: HubClient, tmp_path: Any) -> None:
    before = await hub.items(f"{APPS}/subscriptions")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\nmetadata: {name: bad-one}\n"
        "spec:\n  schedulingStrategy: Sideways\n  subscribers: [{clusterAffinity: {}}]\n"
        "  feeds: [{apiVersion: v1, kind: Namespace, name: foo}]\n"
    )
    result = cnet(system, "apply", "-f", str(bad))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "spec.schedulingStrategy" in output and "bad.yaml" in output
    assert await hub.items(f"{APPS}/subscriptions") == before


async def test_deleting_the_subscription_removes_bases_descriptions_and_objects(system: System, hub: HubClient) -> None:
    await eventually(lambda: hub.get(SUB), 30)
    result = cnet(system, "delete", "subscription", "app-demo", "-n", "default")
    assert result.returncode == 0, result.stderr

    async def gone() -> bool:
        bases = await hub.items(f"{APPS}/bases")
        descs = await hub.items(f"{APPS}/descriptions")
        return not owned_by(bases + descs, "app-demo") and await hub.get(SUB) is None

    await eventually(gone, 60, what="bases and descriptions of app-demo deleted")
    for mc in await hub.items(f"{CLUSTERS}/managedclusters"):
        name = mc["metadata"]["name"]
        await eventually(lambda n=name: not APP_OBJECTS & child_objects(system, n), 10, what=f"{name} emptied")


async def test_hub_process_serves_https_to_credentials_only(system: System) -> None:
    """The hub process as shipped: its generated CA verifies it, anonymous calls are 401, the
    admin token of its token file works, and the probes need nothing."""
    connector = aiohttp.TCPConnector(ssl=system.hub_ssl_context())
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(system.hub_url + f"{CLUSTERS}/managedclusters") as resp:
            assert resp.status == 401 and (await resp.json())["reason"] == "Unauthorized"
        async with session.get(system.hub_url + "/readyz") as resp:
            assert resp.status == 200
        headers = system.hub_headers()
        async with session.get(system.hub_url + f"{CLUSTERS}/managedclusters", headers=headers) as resp:
            assert resp.status == 200
    async with aiohttp.ClientSession() as untrusting:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await untrusting.get(system.hub_url + "/healthz")

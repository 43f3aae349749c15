"""Create, read, replace and delete through Kubernetes-style paths, with kube-apiserver's answers."""

from __future__ import annotations

import aiohttp

from .objects import APPS, subs_path, subscription


async def test_subscription_lifecycle(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns)) as resp:
        assert resp.status == 201
        created = await resp.json()
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1 and meta["resourceVersion"]

    async with http.post(subs_path(unique_ns), json=subscription(unique_ns)) as resp:
        assert resp.status == 409
        assert (await resp.json())["reason"] == "AlreadyExists"

    async with http.get(subs_path(unique_ns, "demo")) as resp:
        assert (await resp.json())["metadata"]["uid"] == meta["uid"]

    async with http.get(subs_path(unique_ns)) as resp:
        listed = await resp.json()
    assert listed["kind"] == "SubscriptionList"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["demo"]
    async with http.get(f"{APPS}/subscriptions") as resp:
        everywhere = (await resp.json())["items"]
    assert any(item["metadata"]["namespace"] == unique_ns for item in everywhere)

    replacement = subscription(unique_ns, schedulingStrategy="Dividing")
    async with http.put(subs_path(unique_ns, "demo"), json=replacement) as resp:
        assert resp.status == 200
        replaced = await resp.json()
    assert replaced["spec"]["schedulingStrategy"] == "Dividing"
    assert replaced["metadata"]["generation"] == 2
    assert replaced["metadata"]["uid"] == meta["uid"]

    async with http.delete(subs_path(unique_ns, "demo")) as resp:
        assert resp.status == 200
        assert (await resp.json())["spec"]["schedulingStrategy"] == "Dividing"
    async with http.get(subs_path(unique_ns, "demo")) as resp:
        assert resp.status == 404
        status = await resp.json()
    assert status["kind"] == "Status" and status["reason"] == "NotFound"
    assert status["message"] == 'subscriptions.apps.clusternet.io "demo" not found'
    async with http.delete(subs_path(unique_ns, "demo")) as resp:
        assert resp.status == 404


async def test_put_creates_then_replaces(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.put(subs_path(unique_ns, "demo"), json=subscription(unique_ns)) as resp:
        assert resp.status == 201
    async with http.put(subs_path(unique_ns, "demo"), json=subscription(unique_ns, priority=5)) as resp:
        assert resp.status == 200
        assert (await resp.json())["spec"]["priority"] == 5


async def test_stale_resource_version_is_a_conflict(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns)) as resp:
        first = await resp.json()
    async with http.put(subs_path(unique_ns, "demo"), json=subscription(unique_ns, priority=1)) as resp:
        assert resp.status == 200

    stale = subscription(unique_ns, priority=2)
    stale["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"]
    async with http.put(subs_path(unique_ns, "demo"), json=stale) as resp:
        assert resp.status == 409
        assert (await resp.json())["reason"] == "Conflict"
    async with http.get(subs_path(unique_ns, "demo")) as resp:
        current = await resp.json()
    assert current["spec"]["priority"] == 1

    fresh = subscription(unique_ns, priority=3)
    fresh["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    async with http.put(subs_path(unique_ns, "demo"), json=fresh) as resp:
        assert resp.status == 200
        assert (await resp.json())["spec"]["priority"] == 3


async def test_dry_run_validates_without_storing(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns), params={"dryRun": "All"}) as resp:
        assert resp.status == 201
    async with http.get(subs_path(unique_ns, "demo")) as resp:
        assert resp.status == 404


async def test_status_in_a_body_is_ignored(http: aiohttp.ClientSession, unique_ns: str) -> None:
    body = subscription(unique_ns)
    body["status"] = {"bindingClusters": ["clusternet-abcde/fake"], "completedReleases": 9}
    async with http.put(subs_path(unique_ns, "demo"), json=body) as resp:
        assert resp.status == 201
    async with http.get(subs_path(unique_ns, "demo")) as resp:
        assert (await resp.json())["status"] == {}


async def test_yaml_body_and_namespace_from_the_path(http: aiohttp.ClientSession, unique_ns: str) -> None:
    yaml_body = """
apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: from-yaml}
spec:
  subscribers: [{clusterAffinity: {}}]
  feeds: [{apiVersion: v1, kind: Namespace, name: foo}]
"""
    headers = {"Content-Type": "application/yaml"}
    async with http.post(subs_path(unique_ns), data=yaml_body, headers=headers) as resp:
        assert resp.status == 201
        assert (await resp.json())["metadata"]["namespace"] == unique_ns


async def test_label_selector_filters_lists(http: aiohttp.ClientSession, unique_ns: str) -> None:
    for name in ("alpha", "beta"):
        async with http.post(subs_path(unique_ns), json=subscription(unique_ns, name)) as resp:
            assert resp.status == 201

    async def names(selector: str) -> list[str]:
        async with http.get(subs_path(unique_ns), params={"labelSelector": selector}) as resp:
            assert resp.status == 200
            return [item["metadata"]["name"] for item in (await resp.json())["items"]]

    assert await names("app=alpha") == ["alpha"]
    assert await names("app!=alpha") == ["beta"]
    assert await names("app") == ["alpha", "beta"]
    assert await names("!app") == []
    assert await names("app in (beta,gamma)") == ["beta"]


async def test_cluster_scoped_kind_lives_outside_namespaces(http: aiohttp.ClientSession, unique_ns: str) -> None:
    name = f"glob-{unique_ns}"
    body = {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Globalization",
        "metadata": {"name": name},
        "spec": {"overrides": [{"type": "MergePatch", "value": "{}"}]},
    }
    async with http.put(f"{APPS}/globalizations/{name}", json=body) as resp:
        assert resp.status == 201
        assert "namespace" not in (await resp.json())["metadata"]
    async with http.get(f"{APPS}/namespaces/default/globalizations/{name}") as resp:
        assert resp.status == 404
    async with http.delete(f"{APPS}/globalizations/{name}") as resp:
        assert resp.status == 200

"""A simulated cluster answers through the ApiServer contract as kube-apiserver would: discovery,
reads, selectors, paging, watches from a resourceVersion, writes through the sim's admission."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from clusternet_nats.agent.backends.apiserver import UpstreamRequest, UpstreamResponse
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.backends.sim import apiserver as sim_apiserver
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION

OWNER = "clusternet-abcde.app"
DEPLOYS = "/apis/apps/v1/namespaces/apps/deployments"
Json = dict[str, Any]


def deployment(name: str, replicas: int = 1, labels: dict[str, str] | None = None) -> Json:
    meta: Json = {"name": name, "namespace": "apps", "labels": labels or {}}
    template = {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    spec = {"replicas": replicas, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


@pytest.fixture
async def cluster() -> AsyncIterator[SimCluster]:
    sim = SimCluster("child-1", Sizing(nodes=2))
    await sim.start()
    await sim.apply(OWNER, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}])
    yield sim
    await sim.close()


async def send(
    sim: SimCluster, method: str, path: str, query: str = "", body: Any = None, content_type: str = "application/json"
) -> UpstreamResponse:
    raw = b"" if body is None else json.dumps(body).encode()
    headers = [("Accept", "application/json"), ("Content-Type", content_type), ("Impersonate-User", "alice")]
    return await sim.apiserver().send(UpstreamRequest(method, path, query, headers, raw))


async def call(
    sim: SimCluster, method: str, path: str, query: str = "", body: Any = None, **kw: str
) -> tuple[int, Json]:
    response = await send(sim, method, path, query, body, **kw)
    data = b"".join([chunk async for chunk in response.body])
    return response.status, json.loads(data)


async def events(response: UpstreamResponse, count: int) -> list[tuple[str, Json]]:
    """The next `count` watch events; the stream is line-delimited JSON."""
    out: list[tuple[str, Json]] = []
    buffer = b""
    async for chunk in response.body:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            event = json.loads(line)
            out.append((event["type"], event["object"]))
            if len(out) == count:
                return out
    return out


async def test_discovery_lists_builtins_held_kinds_and_crds(cluster: SimCluster) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    await cluster.apply(OWNER, [crd])
    status, core = await call(cluster, "GET", "/api/v1")
    assert status == 200 and core["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["namespaces"]["namespaced"] is False and by_name["namespaces"]["shortNames"] == ["ns"]
    assert by_name["configmaps"]["namespaced"] is True and "watch" in by_name["configmaps"]["verbs"]
    assert by_name["nodes"]["verbs"] == ["get", "list", "watch"]
    _, groups = await call(cluster, "GET", "/apis")
    names = {g["name"]: g for g in groups["groups"]}
    assert names["apps"]["preferredVersion"]["groupVersion"] == "apps/v1"
    assert names["example.io"]["versions"] == [{"groupVersion": "example.io/v1", "version": "v1"}]
    _, widgets = await call(cluster, "GET", "/apis/example.io/v1")
    assert [(r["name"], r["kind"], r["shortNames"]) for r in widgets["resources"]] == [("widgets", "Widget", ["wd"])]
    _, version = await call(cluster, "GET", "/version")
    assert version["gitVersion"].startswith("v1.") and version["major"] == "1"
    status, missing = await call(cluster, "GET", "/apis/nothing.io/v1")
    assert status == 404 and missing["reason"] == "NotFound"
    assert missing["message"] == "the server could not find the requested resource"


async def test_get_and_list_with_kube_wording_and_resource_versions(cluster: SimCluster) -> None:
    await cluster.apply(OWNER, [deployment("web", 2), deployment("api", 1)])
    status, web = await call(cluster, "GET", f"{DEPLOYS}/web")
    assert status == 200 and web["kind"] == "Deployment" and web["status"]["readyReplicas"] == 2
    stored = cluster.objects.get(ObjectRef("apps/v1", "Deployment", "apps", "web"))
    assert stored is not None and web["metadata"]["resourceVersion"] == stored.body["metadata"]["resourceVersion"]
    status, listed = await call(cluster, "GET", "/apis/apps/v1/deployments")
    assert status == 200 and listed["kind"] == "DeploymentList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["api", "web"]
    assert listed["metadata"]["resourceVersion"] == str(cluster.objects.revision)
    status, missing = await call(cluster, "GET", f"{DEPLOYS}/nope")
    assert (status, missing["kind"], missing["reason"], missing["code"]) == (404, "Status", "NotFound", 404)
    assert missing["message"] == 'deployments.apps "nope" not found'
    assert missing["details"] == {"name": "nope", "group": "apps", "kind": "deployments"}
    _, in_default = await call(cluster, "GET", "/apis/apps/v1/namespaces/default/deployments")
    assert in_default["items"] == []
    _, nodes = await call(cluster, "GET", "/api/v1/nodes")
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["child-1-node-1", "child-1-node-2"]
    assert nodes["items"][0]["status"]["capacity"]["pods"] == "110"


async def test_selectors_and_paging(cluster: SimCluster) -> None:
    await cluster.apply(OWNER, [deployment(f"d{i}", 0, {"tier": "web" if i % 2 else "db"}) for i in range(5)])
    _, web = await call(cluster, "GET", DEPLOYS, "labelSelector=tier%3Dweb")
    assert [i["metadata"]["name"] for i in web["items"]] == ["d1", "d3"]
    _, not_web = await call(cluster, "GET", DEPLOYS, "labelSelector=tier+notin+(web)")
    assert [i["metadata"]["name"] for i in not_web["items"]] == ["d0", "d2", "d4"]
    _, one = await call(cluster, "GET", "/apis/apps/v1/deployments", "fieldSelector=metadata.name%3Dd2")
    assert [i["metadata"]["name"] for i in one["items"]] == ["d2"]
    status, bad = await call(cluster, "GET", DEPLOYS, "fieldSelector=spec.replicas%3D1")
    assert status == 400 and bad["reason"] == "BadRequest"
    assert "field label not supported: spec.replicas" in bad["message"]
    _, page = await call(cluster, "GET", DEPLOYS, "limit=2")
    assert [i["metadata"]["name"] for i in page["items"]] == ["d0", "d1"]
    assert page["metadata"]["remainingItemCount"] == 3
    _, rest = await call(cluster, "GET", DEPLOYS, f"limit=2&continue={page['metadata']['continue']}")
    assert [i["metadata"]["name"] for i in rest["items"]] == ["d2", "d3"]


async def test_writes_go_through_admission_and_reschedule(cluster: SimCluster) -> None:
    status, created = await call(cluster, "POST", DEPLOYS, body=deployment("web", 3))
    assert status == 201 and created["metadata"]["uid"] and created["status"]["readyReplicas"] == 3
    assert APPLIED_BY_DESCRIPTION not in created["metadata"].get("labels", {}), "a user's object has no owner"
    status, again = await call(cluster, "POST", DEPLOYS, body=deployment("web", 3))
    assert (status, again["reason"]) == (409, "AlreadyExists")
    assert again["message"] == 'deployments.apps "web" already exists'
    status, merged = await call(
        cluster, "PATCH", f"{DEPLOYS}/web", body={"spec": {"replicas": 1}}, content_type="application/merge-patch+json"
    )
    assert status == 200 and merged["spec"]["replicas"] == 1 and merged["status"]["readyReplicas"] == 1
    assert merged["metadata"]["generation"] == 2
    stale = dict(created, spec=created["spec"] | {"replicas": 2})
    status, conflict = await call(cluster, "PUT", f"{DEPLOYS}/web", body=stale)
    assert status == 409 and conflict["reason"] == "Conflict"
    assert "the object has been modified; please apply your changes to the latest version" in conflict["message"]
    fresh = dict(merged, spec=merged["spec"] | {"replicas": 2})
    status, replaced = await call(cluster, "PUT", f"{DEPLOYS}/web", body=fresh)
    assert status == 200 and replaced["status"]["readyReplicas"] == 2
    status, bad = await call(cluster, "POST", DEPLOYS, body=deployment("bad", -1))
    assert status == 422 and bad["reason"] == "Invalid" and "spec.replicas" in bad["message"]
    status, no_ns = await call(cluster, "POST", "/api/v1/namespaces/ghost/configmaps", body={"metadata": {"name": "c"}})
    assert (status, no_ns["message"]) == (404, 'namespaces "ghost" not found')
    apply_patch = "application/apply-patch+yaml"
    status, patch_415 = await call(cluster, "PATCH", f"{DEPLOYS}/web", body={}, content_type=apply_patch)
    assert status == 415 and patch_415["reason"] == "UnsupportedMediaType"
    status, gone = await call(cluster, "DELETE", f"{DEPLOYS}/web")
    assert status == 200 and gone["status"] == "Success" and gone["details"]["name"] == "web"
    assert cluster.objects.get(ObjectRef("apps/v1", "Deployment", "apps", "web")) is None
    status, forbidden = await call(cluster, "DELETE", "/api/v1/namespaces/default")
    assert status == 403
    assert forbidden["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'
    status, read_only = await call(cluster, "DELETE", "/api/v1/nodes/child-1-node-1")
    assert status == 405 and read_only["reason"] == "MethodNotAllowed"


async def test_strategic_patch_merges_containers_by_name(cluster: SimCluster) -> None:
    body = deployment("web")
    body["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    await call(cluster, "POST", DEPLOYS, body=body)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}
    status, patched = await call(
        cluster, "PATCH", f"{DEPLOYS}/web", body=patch, content_type="application/strategic-merge-patch+json"
    )
    containers = patched["spec"]["template"]["spec"]["containers"]
    assert status == 200 and [(c["name"], c["image"]) for c in containers] == [("c", "nginx:2"), ("side", "busybox")]


async def test_watch_from_a_resource_version_sees_changes_and_selector_moves(cluster: SimCluster) -> None:
    _, listed = await call(cluster, "GET", DEPLOYS)
    since = listed["metadata"]["resourceVersion"]
    watch = await send(cluster, "GET", DEPLOYS, f"watch=1&resourceVersion={since}&labelSelector=tier%3Dweb")
    assert watch.status == 200
    await cluster.apply(OWNER, [deployment("db", 1, {"tier": "db"}), deployment("web", 1, {"tier": "web"})])
    await call(cluster, "PATCH", f"{DEPLOYS}/web", body={"metadata": {"labels": {"tier": "cache"}}},
               content_type="application/merge-patch+json")  # fmt: skip
    seen = await events(watch, 3)
    await watch.close()
    kinds = [(t, o["metadata"]["name"]) for t, o in seen]
    assert kinds[0] == ("ADDED", "web"), "the db Deployment is outside the selector"
    assert kinds[1] == ("MODIFIED", "web"), "its status set by the sim's controller"
    assert kinds[2] == ("DELETED", "web"), "relabelled out of the selector"
    revisions = [int(o["metadata"]["resourceVersion"]) for _, o in seen]
    assert revisions == sorted(revisions) and revisions[0] > int(since)


async def test_watch_without_resource_version_starts_with_the_current_objects(cluster: SimCluster) -> None:
    await cluster.apply(OWNER, [deployment("web", 1)])
    watch = await send(cluster, "GET", DEPLOYS, "watch=true")
    first = await events(watch, 1)
    await cluster.prune(OWNER, keep=[ObjectRef("v1", "Namespace", "", "apps")])
    second = await events(watch, 1)
    await watch.close()
    assert [(t, o["metadata"]["name"]) for t, o in first + second] == [("ADDED", "web"), ("DELETED", "web")]


async def test_a_too_old_resource_version_is_410_expired(cluster: SimCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sim_apiserver, "HISTORY", 3)
    api = cluster.apiserver()
    _, listed = await call(cluster, "GET", "/api/v1/configmaps")
    start = int(listed["metadata"]["resourceVersion"])
    for i in range(5):
        meta = {"name": f"c{i}", "namespace": "apps"}
        await cluster.apply(OWNER, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}])
    request = UpstreamRequest("GET", "/api/v1/configmaps", f"watch=1&resourceVersion={start}")
    seen = await events(await api.send(request), 1)
    assert seen[0][0] == "ERROR"
    status = seen[0][1]
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith(f"too old resource version: {start} (")
    query = f"watch=1&resourceVersion={cluster.objects.revision - 1}&timeoutSeconds=0"
    recent = UpstreamRequest("GET", "/api/v1/configmaps", query)
    tail = await events(await api.send(recent), 5)
    assert [(t, o["metadata"]["name"]) for t, o in tail] == [("ADDED", "c4")]


async def test_tables_as_kubectl_asks_for_them_and_406_for_protobuf_only(cluster: SimCluster) -> None:
    await cluster.apply(OWNER, [deployment("web", 2)])
    tables = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io"
    kubectl = f"{tables},application/json"
    api = cluster.apiserver()
    response = await api.send(UpstreamRequest("GET", "/apis/apps/v1/deployments", headers=[("Accept", kubectl)]))
    listed = json.loads(b"".join([c async for c in response.body]))
    assert listed["kind"] == "Table" and listed["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in listed["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    row = listed["rows"][0]
    assert row["cells"][:4] == ["web", "2/2", 2, 2]
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["namespace"] == "apps"
    watch = await api.send(
        UpstreamRequest("GET", DEPLOYS, f"watch=1&resourceVersion={cluster.objects.revision}", [("Accept", kubectl)])
    )
    await cluster.apply(OWNER, [deployment("web", 3), deployment("api", 1)])
    seen = await events(watch, 3)
    await watch.close()
    assert all(obj["kind"] == "Table" for _, obj in seen)
    assert seen[0][1]["columnDefinitions"] and not seen[1][1]["columnDefinitions"], "definitions in the first only"
    assert seen[0][1]["rows"][0]["cells"][0] == "web"
    protobuf = [("Accept", "application/vnd.kubernetes.protobuf")]
    only = await api.send(UpstreamRequest("GET", "/api/v1/namespaces", headers=protobuf))
    assert only.status == 406
    plain = await api.send(UpstreamRequest("GET", "/api/v1/namespaces", headers=[("Accept", "application/json")]))
    body = json.loads(b"".join([c async for c in plain.body]))
    assert plain.status == 200 and body["kind"] == "NamespaceList"
    assert {"default", "kube-system", "apps"} <= {i["metadata"]["name"] for i in body["items"]}


async def test_scale_subresource_as_kubectl_scale_uses_it(cluster: SimCluster) -> None:
    await cluster.apply(OWNER, [deployment("web", 1)])
    _, apps = await call(cluster, "GET", "/apis/apps/v1")
    scale = next(r for r in apps["resources"] if r["name"] == "deployments/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    status, got = await call(cluster, "GET", f"{DEPLOYS}/web/scale")
    assert status == 200 and got["kind"] == "Scale" and got["spec"]["replicas"] == 1
    merge = "application/merge-patch+json"
    scale_path = f"{DEPLOYS}/web/scale"
    status, scaled = await call(cluster, "PATCH", scale_path, body={"spec": {"replicas": 4}}, content_type=merge)
    assert status == 200 and scaled["spec"]["replicas"] == 4 and scaled["status"]["replicas"] == 4
    _, web = await call(cluster, "GET", f"{DEPLOYS}/web")
    assert web["spec"]["replicas"] == 4 and web["status"]["readyReplicas"] == 4
    stale = got | {"spec": {"replicas": 2}}
    status, conflict = await call(cluster, "PUT", f"{DEPLOYS}/web/scale", body=stale)
    assert status == 409 and conflict["reason"] == "Conflict"
    status, negative = await call(cluster, "PATCH", scale_path, body={"spec": {"replicas": -1}}, content_type=merge)
    assert status == 422 and "spec.replicas: Invalid value: -1" in negative["message"]
    status, _ = await call(cluster, "GET", "/api/v1/namespaces/apps/configmaps/x/scale")
    assert status == 404


async def test_openapi_v3_says_every_kind_takes_field_validation(cluster: SimCluster) -> None:
    _, root = await call(cluster, "GET", "/openapi/v3")
    assert root["paths"]["apis/apps/v1"] == {"serverRelativeURL": "/openapi/v3/apis/apps/v1"}
    _, apps = await call(cluster, "GET", "/openapi/v3/apis/apps/v1")
    patch = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert [p["name"] for p in patch["parameters"]] == ["fieldValidation"]


async def test_a_protobuf_body_is_415(cluster: SimCluster) -> None:
    status, refused = await call(
        cluster, "POST", "/api/v1/namespaces", body={}, content_type="application/vnd.kubernetes.protobuf"
    )
    assert status == 415 and refused["reason"] == "UnsupportedMediaType"
    assert refused["message"].endswith("accepted media types include: application/json")


async def test_generate_name_dry_run_and_namespace_cascade(cluster: SimCluster) -> None:
    body = {"metadata": {"generateName": "cfg-", "namespace": "apps"}, "data": {"k": "v"}}
    status, created = await call(cluster, "POST", "/api/v1/namespaces/apps/configmaps", body=body)
    name = created["metadata"]["name"]
    assert status == 201 and name.startswith("cfg-") and len(name) == len("cfg-") + 5
    assert created["apiVersion"] == "v1" and created["kind"] == "ConfigMap", "defaulted from the URL"
    status, dry = await call(cluster, "POST", DEPLOYS, "dryRun=All", body=deployment("ghost"))
    assert status == 201 and dry["metadata"]["name"] == "ghost"
    assert cluster.objects.get(ObjectRef("apps/v1", "Deployment", "apps", "ghost")) is None, "dry run stores nothing"
    status, wrong = await call(cluster, "POST", DEPLOYS, body=deployment("web") | {"apiVersion": "apps/v1beta1"})
    assert status == 400 and "does not match the expected API version (apps/v1)" in wrong["message"]
    elsewhere = deployment("web")
    elsewhere["metadata"]["namespace"] = "default"
    status, moved = await call(cluster, "POST", DEPLOYS, body=elsewhere)
    assert status == 400 and "does not match the namespace sent on the request" in moved["message"]
    status, _ = await call(cluster, "DELETE", "/api/v1/namespaces/apps")
    assert status == 200
    assert cluster.objects.get(ObjectRef("v1", "ConfigMap", "apps", name)) is None, "the namespace took its objects"
    status, gone = await call(cluster, "GET", f"/api/v1/namespaces/apps/configmaps/{name}")
    assert status == 404 and gone["message"] == f'configmaps "{name}" not found'


async def test_a_watch_ends_at_its_timeout_and_bookmarks_when_asked(
    cluster: SimCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sim_apiserver, "BOOKMARK_EVERY", 0.05)
    revision = cluster.objects.revision
    query = f"watch=1&resourceVersion={revision}&allowWatchBookmarks=true&timeoutSeconds=1"
    response = await send(cluster, "GET", DEPLOYS, query)
    lines = [json.loads(line) for chunk in [c async for c in response.body] for line in chunk.splitlines()]
    assert lines and {e["type"] for e in lines} == {"BOOKMARK"}, "nothing changed: bookmarks only, then the end"
    assert lines[0]["object"]["metadata"]["resourceVersion"] == str(revision)
    assert lines[0]["object"]["kind"] == "Deployment"
    status, bad = await call(cluster, "GET", DEPLOYS, "watch=1&resourceVersion=abc")
    assert status == 400 and "resourceVersion" in bad["message"]


async def test_methods_and_paths_kube_apiserver_refuses(cluster: SimCluster) -> None:
    status, body = await call(cluster, "DELETE", DEPLOYS)
    assert (status, body["reason"]) == (405, "MethodNotAllowed")
    status, body = await call(cluster, "POST", "/apis/apps/v1/deployments", body=deployment("x"))
    assert status == 405, "a namespaced kind is created in its namespace's collection"
    status, body = await call(cluster, "GET", "/api/v1/namespaces/apps/nodes")
    assert status == 404, "nodes are not namespaced"
    status, body = await call(cluster, "GET", DEPLOYS, "continue=%%%")
    assert status == 400 and "continue" in body["message"]
    status, body = await call(cluster, "PUT", f"{DEPLOYS}/absent", body=deployment("absent"))
    assert status == 404 and body["message"] == 'deployments.apps "absent" not found'
    status, body = await call(cluster, "PUT", f"{DEPLOYS}/other", body=deployment("web"))
    assert status == 404, "PUT never creates"


async def test_pods_derived_from_workloads_are_listed_and_watched(cluster: SimCluster) -> None:
    big = deployment("big", 3)
    big["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    big["spec"]["template"]["metadata"] = {"labels": {"app": "big"}}
    await cluster.apply(OWNER, [big])  # 2 nodes of 4 CPU: two pods fit, one is Pending
    status, listed = await call(cluster, "GET", "/api/v1/pods")
    assert status == 200 and listed["kind"] == "PodList"
    phases = sorted(p["status"]["phase"] for p in listed["items"])
    assert phases == ["Pending", "Running", "Running"]
    first = listed["items"][0]
    assert first["metadata"]["name"].startswith("big-") and first["metadata"]["labels"] == {"app": "big"}
    assert first["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    _, again = await call(cluster, "GET", "/api/v1/namespaces/apps/pods")
    assert [p["metadata"]["name"] for p in again["items"]] == [p["metadata"]["name"] for p in listed["items"]]
    status, refused = await call(cluster, "DELETE", f"/api/v1/namespaces/apps/pods/{first['metadata']['name']}")
    assert status == 405 and refused["reason"] == "MethodNotAllowed"
    watch = await send(cluster, "GET", "/api/v1/namespaces/apps/pods", "watch=1&labelSelector=app%3Dbig")
    initial = await events(watch, 3)
    assert [t for t, _ in initial] == ["ADDED"] * 3
    merge = "application/merge-patch+json"
    await call(cluster, "PATCH", f"{DEPLOYS}/big", body={"spec": {"replicas": 1}}, content_type=merge)
    scaled_down = await events(watch, 2)
    await call(cluster, "PATCH", f"{DEPLOYS}/big", body={"spec": {"replicas": 2}}, content_type=merge)
    scaled_up = await events(watch, 1)
    await watch.close()
    assert [t for t, _ in scaled_down] == ["DELETED", "DELETED"], "3 -> 1: two pods went, the one kept is untouched"
    assert [(t, o["status"]["phase"]) for t, o in scaled_up] == [("ADDED", "Running")]

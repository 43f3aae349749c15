"""What each user may do: request attributes as kube-apiserver derives them, the hub's roles, 403s
in kube-apiserver's words, and the shadow API authorized on the object it carries."""

from __future__ import annotations

import uuid
from typing import Any

import aiohttp
import pytest
from clusternet_nats.hub.auth.attributes import Attributes, resolve
from clusternet_nats.hub.auth.policy import PolicyError, parse_policy
from clusternet_nats.hub.auth.refusals import forbidden
from clusternet_nats.hub.auth.user import UserInfo
from clusternet_nats.hub.testing import ServedHub

from .conftest import AUDITOR, EDITOR, OUTSIDER, TEAM_A, TEAM_B, VIEWER
from .objects import APPS, deployment, subs_path, subscription

CLUSTERS = "/apis/clusters.clusternet.io/v1beta1"
TOKENS = "/apis/registration.clusternet-nats.io/v1/bootstraptokens"
APPROVALS = "/apis/registration.clusternet-nats.io/v1/approvals"
USER = UserInfo("u")


def _name() -> str:
    return f"o-{uuid.uuid4().hex[:8]}"


A, C, S = "apps.clusternet.io", "clusters.clusternet.io", "subscriptions"
NS = f"{APPS}/namespaces/ns/subscriptions"


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", NS, {}, ("list", A, S, "", "ns", "")),
        ("GET", NS, {"watch": "true"}, ("watch", A, S, "", "ns", "")),
        ("GET", NS, {"fieldSelector": "metadata.name=x"}, ("list", A, S, "", "ns", "x")),
        ("GET", f"{APPS}/subscriptions", {}, ("list", A, S, "", "", "")),
        ("HEAD", f"{NS}/x", {}, ("get", A, S, "", "ns", "x")),
        ("POST", NS, {}, ("create", A, S, "", "ns", "")),
        ("PUT", f"{NS}/x", {}, ("update", A, S, "", "ns", "x")),
        ("PATCH", f"{NS}/x/status", {}, ("patch", A, S, "status", "ns", "x")),
        ("DELETE", f"{NS}/x", {}, ("delete", A, S, "", "ns", "x")),
        ("DELETE", NS, {}, ("deletecollection", A, S, "", "ns", "")),
        ("GET", f"{APPS}/watch/namespaces/ns/subscriptions", {}, ("watch", A, S, "", "ns", "")),
        ("DELETE", f"{CLUSTERS}/managedclusters/x", {}, ("delete", C, "managedclusters", "", "", "x")),
        ("GET", "/api/v1/events", {}, ("list", "", "events", "", "", "")),
        ("GET", "/api/v1/namespaces/ns/events", {}, ("list", "", "events", "", "ns", "")),
        ("GET", "/api/v1/namespaces/ns", {}, ("get", "", "namespaces", "", "ns", "ns")),
        ("POST", f"{APPROVALS}/x", {}, ("create", "registration.clusternet-nats.io", "approvals", "", "", "x")),
        ("GET", "/api/v1/namespaces/ns/pods/p/log", {}, ("get", "", "pods", "log", "ns", "p")),
        ("GET", "/api/v1/proxy/namespaces/ns/pods/p/x", {}, ("proxy", "", "pods", "", "ns", "p")),
        ("GET", "/api/v1/namespaces/ns/proxy/a/b", {}, ("get", "", "proxy", "b", "ns", "a")),
    ],
)  # fmt: skip
def test_attributes_are_kube_apiservers(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    attrs = resolve(USER, method, path, query)
    assert attrs.resource_request
    assert (attrs.verb, attrs.group, attrs.resource, attrs.subresource, attrs.namespace, attrs.name) == expected
    assert attrs.version == path.split("/")[3 if path.startswith("/apis/") else 2]


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [("GET", "/metrics", "get"), ("GET", "/apis", "get"), ("GET", "/apis/apps.clusternet.io/v1alpha1", "get"),
     ("POST", "/api", "post"), ("GET", "/", "get")],
)  # fmt: skip
def test_other_paths_are_non_resource_requests(method: str, path: str, verb: str) -> None:
    attrs = resolve(USER, method, path, {})
    assert not attrs.resource_request and attrs.verb == verb and attrs.path == path


def test_forbidden_is_worded_as_kube_apiserver_words_it() -> None:
    user = UserInfo("jane")
    named = forbidden(resolve(user, "DELETE", f"{APPS}/namespaces/team-b/subscriptions/web", {})).body()
    assert named["message"] == (
        'subscriptions.apps.clusternet.io "web" is forbidden: User "jane" cannot delete resource "subscriptions" '
        'in API group "apps.clusternet.io" in the namespace "team-b"'
    )
    assert named["details"] == {"name": "web", "group": "apps.clusternet.io", "kind": "subscriptions"}
    assert named["reason"] == "Forbidden" and named["code"] == 403 and named["kind"] == "Status"
    cluster = forbidden(resolve(user, "GET", "/api/v1/events", {}), "no RBAC").body()
    assert cluster["message"] == (
        'events is forbidden: User "jane" cannot list resource "events" in API group "" at the cluster scope: no RBAC'
    )
    assert cluster["details"] == {"kind": "events"}
    sub = forbidden(Attributes(user, "get", "/x", True, "", "v1", "pods", "log", "ns", "p")).body()
    assert sub["message"].endswith('cannot get resource "pods/log" in API group "" in the namespace "ns"')
    path = forbidden(resolve(user, "GET", "/metrics", {})).body()
    assert path["message"] == 'forbidden: User "jane" cannot get path "/metrics"' and path["details"] == {}


async def _call(session: aiohttp.ClientSession, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    async with session.request(method, path, json=body) as resp:
        return resp.status, await resp.json(content_type=None) if resp.content_type == "application/json" else None


async def test_admin_writes_anywhere(served_hub: ServedHub) -> None:
    name = _name()
    async with served_hub.session() as admin:
        assert (await _call(admin, "POST", subs_path(TEAM_B), subscription(TEAM_B, name)))[0] == 201
        assert (await _call(admin, "DELETE", subs_path(TEAM_B, name)))[0] == 200


async def test_namespace_editor_writes_its_namespace_only(served_hub: ServedHub) -> None:
    name = _name()
    async with served_hub.session(EDITOR) as editor:
        assert (await _call(editor, "POST", subs_path(TEAM_A), subscription(TEAM_A, name)))[0] == 201
        assert (await _call(editor, "GET", subs_path(TEAM_A, name)))[0] == 200
        assert (await _call(editor, "PUT", subs_path(TEAM_A, name), subscription(TEAM_A, name)))[0] == 200
        code, status = await _call(editor, "POST", subs_path(TEAM_B), subscription(TEAM_B, name))
        assert code == 403
        assert status["message"] == (
            f'subscriptions.apps.clusternet.io is forbidden: User "{EDITOR}" cannot create resource "subscriptions" '
            f'in API group "apps.clusternet.io" in the namespace "{TEAM_B}"'
        )
        assert (await _call(editor, "GET", subs_path(TEAM_B)))[0] == 403
        code, status = await _call(editor, "GET", f"{APPS}/subscriptions")  # -A needs an unscoped role
        assert code == 403 and status["message"].endswith("at the cluster scope")
        globalization = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Globalization",
                         "metadata": {"name": name}, "spec": {"priority": 500}}  # fmt: skip
        assert (await _call(editor, "POST", f"{APPS}/globalizations", globalization))[0] == 403
        assert (await _call(editor, "DELETE", subs_path(TEAM_A, name)))[0] == 200
    async with served_hub.session() as admin:
        assert (await _call(admin, "GET", subs_path(TEAM_B, name)))[0] == 404


async def test_viewers_read_but_never_write(served_hub: ServedHub) -> None:
    name = _name()
    async with served_hub.session() as admin:
        assert (await _call(admin, "POST", subs_path(TEAM_A), subscription(TEAM_A, name)))[0] == 201
    async with served_hub.session(VIEWER) as viewer:  # every namespace
        assert (await _call(viewer, "GET", f"{APPS}/subscriptions"))[0] == 200
        assert (await _call(viewer, "GET", subs_path(TEAM_A, name)))[0] == 200
        assert (await _call(viewer, "GET", f"{CLUSTERS}/clusterregistrationrequests"))[0] == 200
        assert (await _call(viewer, "GET", "/metrics"))[0] == 200
        for method, path, body in (
            ("POST", subs_path(TEAM_A), subscription(TEAM_A, _name())),
            ("PUT", subs_path(TEAM_A, name), subscription(TEAM_A, name)),
            ("DELETE", subs_path(TEAM_A, name), None),
        ):
            assert (await _call(viewer, method, path, body))[0] == 403, (method, path)
    async with served_hub.session(AUDITOR) as auditor:  # team-a and team-b only
        assert (await _call(auditor, "GET", subs_path(TEAM_A, name)))[0] == 200
        assert (await _call(auditor, "GET", subs_path("team-c")))[0] == 403
        assert (await _call(auditor, "GET", f"{APPS}/subscriptions"))[0] == 403
        assert (await _call(auditor, "DELETE", subs_path(TEAM_A, name)))[0] == 403
    async with served_hub.session(OUTSIDER) as outsider:
        assert (await _call(outsider, "GET", subs_path(TEAM_A, name)))[0] == 403
    async with served_hub.session() as admin:
        assert (await _call(admin, "GET", subs_path(TEAM_A, name)))[0] == 200


async def test_tokens_approvals_and_cluster_deletion_are_admin_only(served_hub: ServedHub) -> None:
    cluster = {
        "apiVersion": "clusters.clusternet.io/v1beta1",
        "kind": "ManagedCluster",
        "metadata": {"name": "edge", "namespace": TEAM_A},
        "spec": {"clusterId": str(uuid.uuid4()), "clusterType": "EdgeCluster", "syncMode": "Pull"},
    }
    mcls = f"{CLUSTERS}/namespaces/{TEAM_A}/managedclusters"
    async with served_hub.session() as admin:
        code, _ = await _call(admin, "PUT", f"{mcls}/edge", cluster)
        assert code in (200, 201)
    for user in (EDITOR, VIEWER):
        async with served_hub.session(user) as session:
            for method, path, body in (
                ("POST", TOKENS, {}),
                ("GET", TOKENS, None),
                ("DELETE", f"{TOKENS}/abcdef", None),
                ("POST", "/apis/registration.clusternet-nats.io/v1/approvals/x", {"approved": True}),
                ("DELETE", f"{mcls}/edge", None),
                ("POST", mcls, {**cluster, "metadata": {"name": "other", "namespace": TEAM_A}}),
            ):
                code, status = await _call(session, method, path, body)
                assert code == 403, (user, method, path, status)
                assert status["reason"] == "Forbidden"
    async with served_hub.session(EDITOR) as editor:  # labels and taints are the namespace's to edit
        current = (await _call(editor, "GET", f"{mcls}/edge"))[1]
        current["metadata"]["labels"] = {"env": "edited"}
        assert (await _call(editor, "PUT", f"{mcls}/edge", current))[0] == 200
    async with served_hub.session() as admin:
        assert (await _call(admin, "DELETE", f"{mcls}/edge"))[0] == 200


async def test_shadow_writes_are_authorized_on_the_object(served_hub: ServedHub) -> None:
    name = _name()
    async with served_hub.session(EDITOR) as editor:
        assert (await _call(editor, "POST", "/apis/shadow/v1alpha1/objects", deployment(TEAM_A, name)))[0] == 201
        assert (await _call(editor, "PUT", "/apis/shadow/v1alpha1/objects", deployment(TEAM_A, name)))[0] == 200
        code, status = await _call(editor, "POST", "/apis/shadow/v1alpha1/objects", deployment(TEAM_B, name))
        assert code == 403
        assert status["message"] == (
            f'deployments.shadow is forbidden: User "{EDITOR}" cannot create resource "deployments" '
            f'in API group "shadow" in the namespace "{TEAM_B}"'
        )
        code, status = await _call(editor, "PUT", "/apis/shadow/v1alpha1/objects", subscription(TEAM_B, name))
        assert code == 403 and status["message"].startswith(f'subscriptions.apps.clusternet.io "{name}" is forbidden')
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}}
        code, status = await _call(editor, "POST", "/apis/shadow/v1alpha1/objects", role)
        assert code == 403 and status["message"].endswith("at the cluster scope")
    async with served_hub.session(VIEWER) as viewer:
        assert (await _call(viewer, "PUT", "/apis/shadow/v1alpha1/objects", deployment(TEAM_A, name)))[0] == 403
    async with served_hub.session() as admin:
        manifests = f"{APPS}/namespaces/clusternet-reserved/manifests"
        assert (await _call(admin, "GET", f"{manifests}/deployments.{TEAM_A}.{name}"))[0] == 200
        assert (await _call(admin, "GET", f"{manifests}/deployments.{TEAM_B}.{name}"))[0] == 404
        assert (await _call(admin, "GET", f"{manifests}/clusterroles.{name}"))[0] == 404


def test_policy_file_errors_name_the_field() -> None:
    with pytest.raises(PolicyError, match=r"policy.yaml: bindings\.0\.role: Input should be 'admin', 'edit' or 'view'"):
        parse_policy("bindings: [{role: root, users: [x]}]", "policy.yaml")
    with pytest.raises(PolicyError, match=r"bindings\.0\.namespace: Extra inputs"):
        parse_policy("bindings: [{role: edit, namespace: [a]}]", "policy.yaml")  # a typo must not widen a role
    with pytest.raises(PolicyError, match="not valid YAML"):
        parse_policy("bindings: [", "policy.yaml")

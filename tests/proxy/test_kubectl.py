"""The real kubectl against a real child control plane, reached only through the hub: the hub's
HTTPS API, NATS, the agent's own leaf node dialling the hub through a link the test can cut, the
agent, the child's kube-apiserver. Users are the hub's (tokens); the child sees them impersonated.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import uuid
from typing import Any

import aiohttp
from clusternet_nats.api.proxy import CLUSTERNET_CERTIFICATE, CLUSTERNET_PRIVATE_KEY, CLUSTERNET_TOKEN, PROXY_PREFIX
from clusternet_nats.testing.waiting import eventually
from cryptography import x509
from cryptography.x509.oid import NameOID
from yarl import URL

from tests.proxy.conftest import Proxied


async def _ok(proxied: Proxied, *args: str, user: str = "admin", input: str | None = None) -> str:
    code, out, err = await proxied.kubectl(*args, user=user, input=input)
    assert code == 0, err
    return out


async def test_get_apply_delete_in_the_child(proxied: Proxied) -> None:
    out = await _ok(proxied, "get", "ns,deploy", "-A")
    assert "namespace/kube-system" in out and "namespace/default" in out
    name = f"px-{uuid.uuid4().hex[:6]}"
    manifest = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
    assert "created" in await _ok(proxied, "apply", "-n", "default", "-f", "-", input=manifest)
    direct = proxied.plane.kubectl("get", "configmap", "-n", "default", name, "-o", "json")
    assert direct.returncode == 0 and json.loads(direct.stdout)["data"] == {"k": "v"}
    await _ok(proxied, "delete", "configmap", "-n", "default", name)
    assert proxied.plane.kubectl("get", "configmap", "-n", "default", name).returncode != 0


async def test_watch_sees_a_change_made_in_the_child_within_a_second(proxied: Proxied) -> None:
    namespace = f"pxw-{uuid.uuid4().hex[:6]}"
    assert proxied.plane.kubectl("create", "namespace", namespace).returncode == 0
    assert proxied.plane.kubectl("create", "configmap", "seed", "-n", namespace).returncode == 0
    argv = ["--kubeconfig", str(proxied.kubeconfig("admin")), "get", "configmap", "-n", namespace, "-w", "-o", "name"]
    watch = await asyncio.create_subprocess_exec(
        str(proxied.tools.kubectl), *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert watch.stdout is not None
    lines: list[str] = []

    async def follow() -> None:
        assert watch.stdout is not None
        while line := await watch.stdout.readline():
            lines.append(line.decode().strip())

    reader = asyncio.create_task(follow())
    try:
        await eventually(lambda: "configmap/seed" in lines, timeout=20, what="the watch's initial list")
        created = await proxied.plane.kubectl_async("create", "configmap", "later", "-n", namespace)
        assert created.returncode == 0, created.stderr
        await eventually(lambda: "configmap/later" in lines, timeout=1.0, what="the child's change, watched")
    finally:
        watch.terminate()
        await watch.wait()
        reader.cancel()


async def test_big_bodies_both_ways(proxied: Proxied) -> None:
    """kube-apiserver refuses a ConfigMap over 1 MiB, so 10 MiB go as a dozen 900 KiB ones: each
    created through the proxy (a request body of many frames), then listed back in one 10+ MiB answer."""
    namespace = f"pxb-{uuid.uuid4().hex[:6]}"
    await _ok(proxied, "create", "namespace", namespace)
    sent = {f"big-{i}": uuid.uuid4().hex * (900 * 1024 // 32) for i in range(12)}
    for name, value in sent.items():
        manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}
        await _ok(proxied, "create", "-n", namespace, "-f", "-", input=json.dumps(manifest))
    listed = await _ok(proxied, "get", "configmap", "-n", namespace, "-o", "json")
    assert len(listed) > 10 * 1024 * 1024
    got = {item["metadata"]["name"]: item["data"]["v"] for item in json.loads(listed)["items"] if "v" in item["data"]}
    assert got == sent
    one = json.loads(await _ok(proxied, "get", "configmap", "-n", namespace, "big-3", "-o", "json"))
    assert one["data"]["v"] == sent["big-3"]


async def test_hub_refuses_a_user_without_the_cluster_and_the_child_refuses_an_impersonated_one(
    proxied: Proxied,
) -> None:
    code, _, err = await proxied.kubectl("get", "pods", "-n", "default", user="carol")
    assert code != 0 and "sockets" in err and "forbidden" in err.lower(), err
    code, _, err = await proxied.kubectl("get", "pods", "-n", "default", user="bob")
    # The child's own RBAC message, naming the hub's user: impersonation reached it.
    assert code != 0 and 'User "bob" cannot list resource "pods"' in err, err


async def test_a_cut_link_ends_watches_answers_503_at_once_and_works_after_restore(proxied: Proxied) -> None:
    """One cut per module: once its leaf reconnects, the leaf has learnt the hub's own leaf address
    (nats-server advertises it) and a second cut of this link would no longer partition it."""
    path = f"{PROXY_PREFIX}{proxied.identity.cluster_id}/proxy/direct/api/v1/namespaces?watch=1"
    async with proxied.hub.session() as session, session.get(path) as watch:
        assert watch.status == 200
        first = await asyncio.wait_for(watch.content.readline(), timeout=20)
        assert json.loads(first)["type"] == "ADDED"  # the watch is established, events flowing
        await proxied.link.cut()
        try:
            message = f"agent of cluster {proxied.identity.cluster_id} is disconnected"

            async def refused_at_once() -> bool:
                code, _, err = await proxied.kubectl("get", "ns", "--request-timeout=3s")
                return code != 0 and message in err

            await eventually(refused_at_once, timeout=15, what="503 once the hub's server lost the leaf")

            async def ended() -> bool:
                # The hub's keepalive met no-responders: it ends the watch rather than hold it silent.
                with contextlib.suppress(aiohttp.ClientPayloadError, ConnectionError):
                    while await watch.content.readline():
                        pass
                return True

            assert await asyncio.wait_for(ended(), timeout=20)
        finally:
            await proxied.link.restore()

    async def answers() -> bool:
        code, _, _ = await proxied.kubectl("get", "ns", "--request-timeout=5s")
        return code == 0

    await eventually(answers, timeout=60, what="answers again once the leaf reconnected")


async def _whoami(proxied: Proxied, user: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """The child's SelfSubjectReview through the proxy: who the child's API server sees."""
    path = f"{PROXY_PREFIX}{proxied.identity.cluster_id}/proxy/direct/apis/authentication.k8s.io/v1/selfsubjectreviews"
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    async with proxied.hub.session(user) as session, session.post(path, json=review, headers=headers) as response:
        return response.status, await response.json()


async def test_the_child_sees_the_hub_user_or_the_credential_passed_clusternets_way(proxied: Proxied) -> None:
    status, seen = await _whoami(proxied, "bob")
    assert status == 201, seen
    assert seen["status"]["userInfo"]["username"] == "bob"
    assert "dev" in seen["status"]["userInfo"]["groups"]

    assert proxied.plane.kubectl("create", "serviceaccount", "px-viewer", "-n", "default").returncode in (0, 1)
    token = proxied.plane.kubectl("create", "token", "px-viewer", "-n", "default").stdout.strip()
    assert token
    # Whatever Authorization or Impersonate-* the client adds never reaches the child.
    forged = {"Impersonate-User": "system:admin", "Impersonate-Group": "system:masters"}
    status, seen = await _whoami(proxied, "bob", {CLUSTERNET_TOKEN: token, **forged})
    assert status == 201, seen
    assert seen["status"]["userInfo"]["username"] == "system:serviceaccount:default:px-viewer"
    status, seen = await _whoami(proxied, "bob", forged)
    assert seen["status"]["userInfo"]["username"] == "bob"


async def test_an_upgrade_refused_by_the_child_reaches_kubectl_unchanged(proxied: Proxied) -> None:
    """The test control planes have no kubelet: a port-forward cannot succeed, and the child's own
    refusal is what kubectl must show."""
    code, _, err = await proxied.kubectl("port-forward", "-n", "default", "pod/px-nowhere", "18080:80")
    assert code != 0 and 'pods "px-nowhere" not found' in err, err


async def test_unknown_cluster_discovery_and_the_scheme_host_form(proxied: Proxied) -> None:
    async with proxied.hub.session() as session:
        async with session.get(f"{PROXY_PREFIX}{uuid.uuid4()}/proxy/direct/version") as response:
            assert response.status == 404 and "no cluster has the id" in (await response.json())["message"]
        async with session.get("/apis/proxies.clusternet.io/v1alpha1") as response:
            names = [r["name"] for r in (await response.json())["resources"]]
            assert names == ["sockets", "sockets/proxy"]
        base = f"{PROXY_PREFIX}{proxied.identity.cluster_id}/proxy"
        server = URL(proxied.plane.server)

        async def via_reported_url() -> bool:
            async with session.get(f"{base}/{server.scheme}/{server.raw_authority}/version") as response:
                return response.status == 200 and "gitVersion" in await response.json()

        await eventually(via_reported_url, timeout=30, what="the API server URL the heartbeat reports")
        async with session.get(f"{base}/https/example.com:443/version") as response:
            assert response.status == 502 and "only its own API server" in (await response.json())["message"]


async def test_a_client_certificate_passed_clusternets_way_is_who_the_child_sees(proxied: Proxied) -> None:
    pki = proxied.plane.pki
    cert, key = pki.admin_cert.read_bytes(), pki.admin_key.read_bytes()
    subject = x509.load_pem_x509_certificate(cert).subject
    common_name = subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    headers = {
        CLUSTERNET_CERTIFICATE: base64.b64encode(cert).decode(),
        CLUSTERNET_PRIVATE_KEY: base64.b64encode(key).decode(),
    }
    status, seen = await _whoami(proxied, "bob", headers)
    assert status == 201, seen
    assert seen["status"]["userInfo"]["username"] == common_name != "bob"
    status, seen = await _whoami(proxied, "bob", {**headers, CLUSTERNET_PRIVATE_KEY: "not base64!"})
    assert status == 400 and CLUSTERNET_PRIVATE_KEY in seen["message"]

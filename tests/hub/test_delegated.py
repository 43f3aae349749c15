"""Delegated authentication and authorization against a REAL kube-apiserver, as an aggregated
apiserver uses its parent: a ServiceAccount token checked by TokenReview, RBAC Roles enforced
through SubjectAccessReview, and refusals worded exactly as kube-apiserver words its own.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer, free_port
from clusternet_nats.testing.waiting import eventually
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from .objects import subs_path, subscription

NS, OTHER, SA = "deleg-a", "deleg-b", "alice"
USER = f"system:serviceaccount:{NS}:{SA}"
TOKENS = "/apis/registration.clusternet-nats.io/v1/bootstraptokens"
RBAC = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: {OTHER}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: {SA}, namespace: {NS}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: subs-writer, namespace: {NS}}}
rules:
  - apiGroups: [apps.clusternet.io]
    resources: [subscriptions]
    verbs: [get, list, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: alice-subs-writer, namespace: {NS}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: subs-writer}}
subjects: [{{kind: ServiceAccount, name: {SA}, namespace: {NS}}}]
"""


@pytest.fixture(scope="module")
async def sa_token(kube_parent: ControlPlane) -> str:
    applied = await kube_parent.kubectl_async("apply", "-f", "-", input=RBAC)
    assert applied.returncode == 0, applied.stderr
    created = await kube_parent.kubectl_async("create", "token", SA, "-n", NS, "--duration", "1h")
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


@pytest.fixture(scope="module")
async def delegated_hub(nats_server: NatsServer, kube_parent: ControlPlane) -> AsyncIterator[ServedHub]:
    async with running_hub(
        nats_server.url,
        authentication_kubeconfig=kube_parent.kubeconfig,
        authorization_kubeconfig=kube_parent.kubeconfig,
        token_cache_ttl=0.5,
        authorized_cache_ttl=0.5,
        unauthorized_cache_ttl=0.5,
    ) as hub:
        yield hub


async def _call(session: aiohttp.ClientSession, method: str, url: str, body: Any = None) -> tuple[int, Any]:
    async with session.request(method, url, json=body) as resp:
        return resp.status, await resp.json(content_type=None)


def _kube_session(kube: ControlPlane, token: str) -> aiohttp.ClientSession:
    """A session to the parent kube-apiserver itself, presenting only `token`."""
    context = ssl.create_default_context(cafile=str(kube.pki.ca_cert))
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=context), headers={"Authorization": f"Bearer {token}"}
    )


async def test_service_account_token_and_rbac_role(delegated_hub: ServedHub, sa_token: str) -> None:
    name = f"deleg-{int(time.time() * 1000) % 10**8}"
    async with delegated_hub.session(token=sa_token) as alice:
        assert (await _call(alice, "GET", subs_path(NS)))[0] == 200
        assert (await _call(alice, "POST", subs_path(NS), subscription(NS, name)))[0] == 201
        assert (await _call(alice, "GET", subs_path(NS, name)))[0] == 200
        code, status = await _call(alice, "DELETE", subs_path(NS, name))  # the Role grants no delete
        assert code == 403
        assert status["message"] == (
            f'subscriptions.apps.clusternet.io "{name}" is forbidden: User "{USER}" cannot delete resource '
            f'"subscriptions" in API group "apps.clusternet.io" in the namespace "{NS}"'
        )
        assert (await _call(alice, "POST", subs_path(OTHER), subscription(OTHER, name)))[0] == 403
        assert (await _call(alice, "POST", TOKENS, {}))[0] == 403
    async with delegated_hub.session() as admin:  # system:masters, from the token file, still works
        assert (await _call(admin, "GET", subs_path(NS, name)))[0] == 200
        assert (await _call(admin, "GET", subs_path(OTHER, name)))[0] == 404


async def test_refusals_are_kube_apiservers_own(
    delegated_hub: ServedHub, kube_parent: ControlPlane, sa_token: str
) -> None:
    """The same request to the hub and to kube-apiserver gets the same Status, byte for byte as JSON:
    the hub derives the same attributes, asks the same question and words the answer the same."""
    for token, path in (
        (sa_token, f"/api/v1/namespaces/{OTHER}/configmaps"),
        (sa_token, f"/api/v1/namespaces/{NS}/configmaps/settings"),
        (sa_token, "/apis/apps/v1/deployments"),
        (sa_token, "/metrics"),
        ("not-a-valid-token", f"/api/v1/namespaces/{NS}/configmaps"),
    ):
        async with _kube_session(kube_parent, token) as kube, delegated_hub.session(token=token) as hub:
            theirs = await _call(kube, "GET", kube_parent.server + path)
            ours = await _call(hub, "GET", path)
        assert theirs[0] in (401, 403), theirs
        assert ours == theirs, path


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _resigned(token: str, kube: ControlPlane, **claims: Any) -> str:
    """`token` with `claims` changed, signed again with the cluster's service-account key."""
    header, payload, _ = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body = f"{header}.{_b64(json.dumps({**data, **claims}).encode())}"
    key = serialization.load_pem_private_key(kube.pki.sa_key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    r, s = decode_dss_signature(key.sign(body.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{body}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


async def test_expired_token_is_refused(delegated_hub: ServedHub, kube_parent: ControlPlane, sa_token: str) -> None:
    now = int(time.time())
    fresh = _resigned(sa_token, kube_parent, iat=now - 60, nbf=now - 60, exp=now + 3600)
    expired = _resigned(sa_token, kube_parent, iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    async with delegated_hub.session(token=fresh) as session:  # the re-signing itself is sound
        assert (await _call(session, "GET", subs_path(NS)))[0] == 200
    async with delegated_hub.session(token=expired) as session:
        code, status = await _call(session, "GET", subs_path(NS))
    assert (code, status["reason"]) == (401, "Unauthorized")


async def test_removed_role_binding_stops_access(
    delegated_hub: ServedHub, kube_parent: ControlPlane, sa_token: str
) -> None:
    """SubjectAccessReview answers are cached for a short while only: RBAC changes take effect."""
    async with delegated_hub.session(token=sa_token) as alice:
        assert (await _call(alice, "GET", subs_path(NS)))[0] == 200
        removed = await kube_parent.kubectl_async("delete", "rolebinding", "alice-subs-writer", "-n", NS)
        assert removed.returncode == 0, removed.stderr
        try:

            async def refused() -> bool:
                return (await _call(alice, "GET", subs_path(NS)))[0] == 403

            await eventually(refused, timeout=20, what="the hub refuses once the RoleBinding is gone")
        finally:
            restored = await kube_parent.kubectl_async("apply", "-f", "-", input=RBAC)
            assert restored.returncode == 0, restored.stderr


async def test_unreachable_kube_apiserver_fails_closed(nats_server: NatsServer, tmp_path: Path) -> None:
    """No review, no access: an unknown token is 401 and a user no local rule allows gets a 500
    (kube-apiserver's answer when its authorizer errs), while system:masters keeps working."""
    kubeconfig = tmp_path / "dead.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "dead", "cluster": {"server": f"https://127.0.0.1:{free_port()}",
                                                          "insecure-skip-tls-verify": True}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "u"}}],
                "current-context": "dead",
            }
        )
    )  # fmt: skip
    async with running_hub(
        nats_server.url,
        users={"carol": []},
        authentication_kubeconfig=kubeconfig,
        authorization_kubeconfig=kubeconfig,
    ) as hub:
        async with hub.session(token="some-service-account-token") as stranger:
            code, status = await _call(stranger, "GET", subs_path(NS))
            assert (code, status["reason"]) == (401, "Unauthorized")
        async with hub.session("carol") as carol:
            code, status = await _call(carol, "GET", subs_path(NS))
            assert (code, status["reason"]) == (500, "InternalError")
            assert status["message"].startswith("Internal error occurred: SubjectAccessReview at")
        async with hub.session() as admin:
            assert (await _call(admin, "GET", subs_path(NS)))[0] == 200

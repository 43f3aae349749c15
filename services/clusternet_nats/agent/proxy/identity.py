"""The request the child's API server sees: the user's, minus their credentials, as the user.

The hub authenticated the user; the agent calls with its own credentials and Kubernetes'
impersonation headers, so the child's RBAC decides and its audit log names the user (the agent's
service account needs `impersonate` only). A child credential the user passed Clusternet's way
(`ChildCredential`) is used instead, without impersonation, as Clusternet's exchanger does.
Whatever credential or impersonation header the client sent is dropped here again, whatever the
hub did: the agent never forwards a header that would change who it acts as.
"""

from __future__ import annotations

from clusternet_nats.agent.backends.apiserver import UpstreamRequest
from clusternet_nats.api.proxy import ProxyOpen, forwardable
from clusternet_nats.api.proxy import ProxyUser as User

AUTHENTICATED = "system:authenticated"


def impersonation(user: User) -> list[tuple[str, str]]:
    """`Impersonate-*` headers for `user` (kube-apiserver adds `system:authenticated` itself).
    Extras are not forwarded: each would need its own `userextras/<key>` grant in the child."""
    headers = [("Impersonate-User", user.name)]
    headers += [("Impersonate-Group", group) for group in user.groups if group != AUTHENTICATED]
    if user.uid:
        headers.append(("Impersonate-Uid", user.uid))
    return headers


def upstream_request(request: ProxyOpen, body: bytes) -> UpstreamRequest:
    headers = [(k, v) for k, v in request.headers if forwardable(k)]
    credential = request.credential
    certificate: tuple[bytes, bytes] | None = None
    if credential is not None and credential.token:
        headers.append(("Authorization", f"Bearer {credential.token}"))
    elif credential is not None and credential.certificate and credential.private_key:
        certificate = (credential.certificate, credential.private_key)
    else:
        headers += impersonation(request.user)
    return UpstreamRequest(
        method=request.method,
        path=request.path,
        query=request.query,
        headers=headers,
        body=body,
        timeout=request.timeout,
        client_certificate=certificate,
    )

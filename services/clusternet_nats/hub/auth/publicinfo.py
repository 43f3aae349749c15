"""Discovery and version paths any authenticated user may read, as Kubernetes' default RBAC allows.

kube-apiserver binds `system:discovery` and `system:public-info-viewer` to `system:authenticated`,
so every client (kubectl first of all) can learn what the server serves before it asks for
anything; without this, a user with only a namespaced role could not run `kubectl get`.
"""

from __future__ import annotations

from clusternet_nats.hub.auth.attributes import Attributes
from clusternet_nats.hub.auth.decision import NO_OPINION, Decision, Verdict
from clusternet_nats.hub.auth.user import AUTHENTICATED

# The non-resource URLs of system:discovery and system:public-info-viewer.
EXACT = frozenset({"/api", "/apis", "/openapi", "/version", "/version/", "/healthz", "/livez", "/readyz"})
PREFIXES = ("/api/", "/apis/", "/openapi/")


class DiscoveryAuthorizer:
    """Allows `get` on the discovery paths to authenticated users; no opinion on anything else."""

    async def authorize(self, attrs: Attributes) -> Decision:
        if attrs.resource_request or attrs.verb != "get" or AUTHENTICATED not in attrs.user.groups:
            return NO_OPINION
        if attrs.path in EXACT or attrs.path.startswith(PREFIXES):
            return Decision(Verdict.ALLOW, "allowed by the system:discovery role")
        return NO_OPINION

"""401 and 403 as kube-apiserver words them, so kubectl-minded clients and people read them alike."""

from __future__ import annotations

from clusternet_nats.hub.auth.attributes import Attributes
from clusternet_nats.hub.errors import ApiError


def unauthorized() -> ApiError:
    """No credentials, or none that any authenticator accepts (kube-apiserver says no more)."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden_message(attrs: Attributes) -> str:
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}" {where}'


def forbidden(attrs: Attributes, reason: str = "") -> ApiError:
    """403 with kube-apiserver's message and details (group, resource as kind, name)."""
    message = forbidden_message(attrs) + (f": {reason}" if reason else "")
    if not attrs.resource_request or not attrs.resource:
        return ApiError(403, "Forbidden", f"forbidden: {message}", {})
    subject = attrs.qualified_resource + (f' "{attrs.name}"' if attrs.name else "")
    details = {k: v for k, v in (("name", attrs.name), ("group", attrs.group), ("kind", attrs.resource)) if v}
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {message}", details)

"""A request as an authorizer sees it: kube-apiserver's RequestInfo, derived from method and path.

Derived from the path alone, exactly as kube-apiserver's request-info resolver does, so a
SubjectAccessReview for a hub request asks the same question kube-apiserver would ask for that
path, and RBAC rules written for the parent cluster mean the same here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clusternet_nats.hub.auth.user import UserInfo

_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_SPECIAL_VERBS = frozenset({"proxy", "watch"})


@dataclass(frozen=True)
class Attributes:
    """What is asked: a resource request (group/resource/...) or a non-resource path."""

    user: UserInfo
    verb: str
    path: str
    resource_request: bool = False
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def qualified_resource(self) -> str:
        """`subscriptions.apps.clusternet.io`, or `events` in the core group."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


def resolve(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The attributes kube-apiserver would derive for `method path?query` (its RequestInfoFactory)."""
    parts = [p for p in path.strip("/").split("/") if p]
    if len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    elif len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        return Attributes(user, method.lower(), path)
    verb = _VERBS.get(method.upper(), "")
    if rest[0] in _SPECIAL_VERBS and len(rest) >= 2:
        verb, rest = rest[0], rest[1:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "").lower() in ("true", "1") else "list"
        name = _exact_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, path, True, group, version, resource, subresource, namespace, name)


def _exact_name(field_selector: str) -> str:
    """`metadata.name=X` in a list's field selector names the object, as kube-apiserver reads it."""
    for term in field_selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!") and value and "/" not in value:
            return value.strip()
    return ""

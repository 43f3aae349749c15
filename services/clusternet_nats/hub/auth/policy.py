"""The hub's own roles, bound to users and groups by a small YAML file (`--authorization-policy-file`).

For a hub that is not delegated to a Kubernetes cluster. Three roles, as Kubernetes' default
ClusterRoles name them:

- `admin`: everything.
- `edit`: read and write objects, in the listed namespaces (or all, with cluster-scoped objects
  too, when none are listed).
- `view`: read them, likewise.

Reaching a child through the proxy (`sockets/<cluster-id>/proxy`, Clusternet's aggregated API)
needs a binding that lists the cluster's id in `clusters` (`"*"`: every cluster), whatever its
role, or `admin`; the child's own RBAC then decides what the user may do there.

Some things are admin-only whatever the role: bootstrap tokens and approvals (they mint cluster
credentials), writing ClusterRegistrationRequests, creating or deleting ManagedClusters
(deletion revokes a cluster), and non-resource paths but `/metrics` (for unscoped roles).

```yaml
bindings:
  - role: edit
    users: [alice]
    groups: [team-a]
    namespaces: [team-a]
  - role: view
    users: [alice]
    clusters: [4a1f2a0e-8f7c-4a7e-9c55-0b5e1f1c2d3e]
```
"""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path

from clusternet_nats.api.proxy import PROXIES_GROUP, SOCKETS_RESOURCE
from clusternet_nats.api.registration import BOOTSTRAP_TOKENS_PATH
from clusternet_nats.api.yamljson import DecodeError, load_yaml
from clusternet_nats.hub.auth.attributes import Attributes
from clusternet_nats.hub.auth.decision import NO_OPINION, Decision, Verdict
from clusternet_nats.hub.auth.user import SYSTEM_MASTERS
from pydantic import BaseModel, ConfigDict, ValidationError

READ = frozenset({"get", "list", "watch"})
WRITE = frozenset({"create", "update", "patch", "delete", "deletecollection"})
REGISTRATION_GROUP = BOOTSTRAP_TOKENS_PATH.split("/")[2]
CLUSTERS_GROUP = "clusters.clusternet.io"
METRICS_PATH = "/metrics"


class Role(StrEnum):
    ADMIN = "admin"
    EDIT = "edit"
    VIEW = "view"


class Binding(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    """Empty: every namespace and cluster-scoped objects."""
    clusters: tuple[str, ...] = ()
    """Cluster ids whose API server the users may reach through the proxy; `*`: every cluster."""

    def applies_to(self, attrs: Attributes) -> bool:
        return attrs.user.name in self.users or any(g in self.groups for g in attrs.user.groups)

    def allows(self, attrs: Attributes) -> bool:
        if self.role is Role.ADMIN:
            return True
        if attrs.resource_request and attrs.group == PROXIES_GROUP:
            return attrs.resource == SOCKETS_RESOURCE and bool({"*", attrs.name} & set(self.clusters))
        if admin_only(attrs):
            return False
        if not attrs.resource_request:
            return attrs.path == METRICS_PATH and attrs.verb == "get" and not self.namespaces
        # A request without a namespace (cluster-scoped, or across all) needs an unscoped binding.
        in_scope = not self.namespaces or (attrs.namespace != "" and attrs.namespace in self.namespaces)
        verbs = READ | WRITE if self.role is Role.EDIT else READ
        return in_scope and attrs.verb in verbs


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bindings: tuple[Binding, ...] = ()


def admin_only(attrs: Attributes) -> bool:
    """Requests no role but admin may make, whatever its namespaces."""
    if not attrs.resource_request:
        return attrs.path != METRICS_PATH
    if attrs.group == REGISTRATION_GROUP:
        return True
    if attrs.group != CLUSTERS_GROUP or attrs.verb in READ:
        return False
    if attrs.resource == "clusterregistrationrequests":
        return True
    return attrs.resource == "managedclusters" and attrs.verb in ("create", "delete", "deletecollection")


class PolicyError(ValueError):
    """The policy file is malformed; the message names the file and the field."""


def parse_policy(text: str, source: str = "policy") -> Policy:
    try:
        data = load_yaml(text) or {}
        return Policy.model_validate(data)
    except DecodeError as err:
        raise PolicyError(f"{source}: not valid YAML: {err}") from None
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())
        raise PolicyError(f"{source}: {problems}") from None


class PolicyAuthorizer:
    """Allows what a binding of the user's allows; no opinion otherwise (another authorizer may allow)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    @classmethod
    async def load(cls, path: Path) -> PolicyAuthorizer:
        return cls(parse_policy(await asyncio.to_thread(path.read_text), str(path)))

    async def authorize(self, attrs: Attributes) -> Decision:
        for binding in self.policy.bindings:
            if binding.applies_to(attrs) and binding.allows(attrs):
                return Decision(Verdict.ALLOW, f"allowed by the {binding.role} binding of the hub's policy")
        return NO_OPINION


class MastersAuthorizer:
    """`system:masters` may do anything, as on kube-apiserver and aggregated apiservers."""

    async def authorize(self, attrs: Attributes) -> Decision:
        return Decision(Verdict.ALLOW) if SYSTEM_MASTERS in attrs.user.groups else NO_OPINION

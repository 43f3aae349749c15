"""Push mode's wire contract: who deploys a Description, and how the hub asks a child to.

Clusternet's rules (pkg/utils/deployer.go): the agent deploys in Pull, never in Push, and in
Dual unless its AppPusher feature gate is on; the hub deploys when the cluster is not Pull and
reports `appPusher: true`. In Push the hub reaches the child only through the tunnel, so "the hub
applies" is a request on the cluster's own subject, `clusternet.proxy.<namespace>.<name>.apply`,
which only that cluster's agent serves (and, with per-cluster credentials, only it may serve).
The agent applies with the same code as in Pull and replies with the Description's status; the
hub side writes `descriptions-status`, as Clusternet's hub-side deployer does. On
`clusternet.proxy.<namespace>.<name>.prune` the hub names every Description the cluster should
hold, so what was deleted while the hub side was down is removed too.
"""

from __future__ import annotations

from clusternet_nats.api.apps import Description, DescriptionStatus
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.meta import Model
from clusternet_nats.api.schemas import register_message
from clusternet_nats.api.subjects import PROXY

APPLY = "apply"
PRUNE = "prune"


def proxy_subject(namespace: str, name: str, verb: str) -> str:
    """The subject on which cluster `<namespace>/<name>`'s agent serves `verb` (apply, prune)."""
    return PROXY.format(namespace=namespace, name=name, verb=verb)


def deployable_by_agent(sync_mode: ClusterSyncMode, app_pusher: bool) -> bool:
    return sync_mode is ClusterSyncMode.PULL or (sync_mode is ClusterSyncMode.DUAL and not app_pusher)


def deployable_by_hub(sync_mode: ClusterSyncMode, app_pusher: bool | None) -> bool:
    return sync_mode is not ClusterSyncMode.PULL and bool(app_pusher)


class PushRequest(Model):
    """Make the child hold `description` (absent: remove what Description `key` applied)."""

    key: str
    """`<namespace>.<name>` of the Description: the owner label of what it applies."""
    description: Description | None = None


class PruneRequest(Model):
    """Remove what any Description applied unless it is named here: the cluster's whole desired set."""

    keep: list[str]


class PushReply(Model):
    status: DescriptionStatus | None = None
    """The Description's status after applying; absent after a removal."""
    error: str | None = None
    """Why the request could not be handled at all (not a deploy failure: that is in status)."""


register_message(PushRequest, "clusters.clusternet.io", "v1beta1")
register_message(PruneRequest, "clusters.clusternet.io", "v1beta1")
register_message(PushReply, "clusters.clusternet.io", "v1beta1")

"""The Base a Subscription gets in one bound cluster: its name, labels and feeds.

The name is `<subscription>-<5 chars>` like Clusternet's, but the suffix is a hash of the
Subscription's namespace and name instead of random, so any deployer replica, before or after a
restart, derives the same Base and never creates a second one. A default-init Subscription's
mark (`apps.clusternet.io/is-default-cluster-init`) is copied onto its Bases, as Clusternet's
deployer does, so a Base reads the same as there.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Base, BaseSpec, Description, Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import ObjectMeta, OwnerReference
from clusternet_nats.domain import clusterinit
from clusternet_nats.domain.names import short_hash

MAX_LABEL_VALUE = 63


def base_name(sub: Subscription) -> str:
    return f"{sub.name}-{short_hash(sub.namespace, sub.name)}"


def with_name_label(labels: dict[str, str], key: str, name: str) -> dict[str, str]:
    """Adds a name label when the name fits in a label value; Clusternet leaves longer names out."""
    if len(name) <= MAX_LABEL_VALUE:
        labels[key] = name
    return labels


def derived_metadata(config: Base | Description, labels: Mapping[str, str]) -> ObjectMeta:
    """Metadata of an object derived from `config` (a Description from its Base, a HelmRelease
    from its Description): `labels` plus the config labels naming `config`, its controlling owner."""
    merged = {key: value for key, value in labels.items() if key != known.CONFIG_NAME}
    merged |= {
        known.CONFIG_KIND: config.KIND,
        known.CONFIG_NAMESPACE: config.namespace,
        known.CONFIG_UID: config.metadata.uid or "",
    }
    owner = OwnerReference.controller_of(config)
    return ObjectMeta(labels=with_name_label(merged, known.CONFIG_NAME, config.name), owner_references=[owner])


def cluster_labels(cluster: ManagedCluster) -> dict[str, str]:
    """The cluster's labels, with the identity labels Clusternet always puts on a ManagedCluster."""
    return {
        known.CLUSTER_ID: cluster.spec.cluster_id,
        known.CLUSTER_NAME: cluster.name,
        **(cluster.metadata.labels or {}),
    }


def desired_base(sub: Subscription, cluster: ManagedCluster) -> Base:
    identity = cluster_labels(cluster)
    labels = {
        known.CREATED_BY: known.DEPLOYER,
        known.CONFIG_KIND: Subscription.KIND,
        known.CONFIG_NAMESPACE: sub.namespace,
        known.CONFIG_UID: sub.metadata.uid or "",
        known.SUBS_NAMESPACE: sub.namespace,
        known.SUBS_UID: sub.metadata.uid or "",
        known.CLUSTER_ID: identity[known.CLUSTER_ID],
        known.CLUSTER_NAME: identity[known.CLUSTER_NAME],
    }
    with_name_label(labels, known.CONFIG_NAME, sub.name)
    with_name_label(labels, known.SUBS_NAME, sub.name)
    init_mark = (sub.metadata.annotations or {}).get(clusterinit.IS_DEFAULT_ANNOTATION)
    return Base.new(
        base_name(sub),
        cluster.namespace,
        metadata=ObjectMeta(
            labels=labels, annotations={clusterinit.IS_DEFAULT_ANNOTATION: init_mark} if init_mark else None
        ),
        spec=BaseSpec(feeds=[feed.model_copy() for feed in sub.spec.feeds]),
    )

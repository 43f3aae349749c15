"""Clusternet's API as pydantic models: the objects every service reads, writes and sends.

Import from here rather than from the submodules: the kinds (apps.clusternet.io/v1alpha1 and
clusters.clusternet.io/v1beta1), the kind registry (names, scope, store buckets) and the loader
that turns user YAML into objects. Field-level building blocks live in ``api.meta``.
"""

from clusternet_nats.api.apps import (
    Base,
    DeployerType,
    Description,
    DividingType,
    FeedInventory,
    Globalization,
    HelmChart,
    HelmRelease,
    Localization,
    Manifest,
    OverridePolicy,
    OverrideType,
    PreemptionPolicy,
    SchedulingStrategy,
    Subscription,
)
from clusternet_nats.api.clusters import ClusterRegistrationRequest, ClusterSyncMode, ManagedCluster
from clusternet_nats.api.events import Event, EventType
from clusternet_nats.api.loader import (
    ObjectError,
    ObjectErrors,
    load_documents,
    load_path,
    parse_object,
)
from clusternet_nats.api.meta import Feed, KubeObject, LabelSelector, ObjectMeta
from clusternet_nats.api.registry import KindInfo, UnknownKindError, all_kinds, by_kind, resolve

__all__ = [
    "Base",
    "ClusterRegistrationRequest",
    "ClusterSyncMode",
    "DeployerType",
    "Description",
    "DividingType",
    "Event",
    "EventType",
    "Feed",
    "FeedInventory",
    "Globalization",
    "HelmChart",
    "HelmRelease",
    "KindInfo",
    "KubeObject",
    "LabelSelector",
    "Localization",
    "ManagedCluster",
    "Manifest",
    "ObjectError",
    "ObjectErrors",
    "ObjectMeta",
    "OverridePolicy",
    "OverrideType",
    "PreemptionPolicy",
    "SchedulingStrategy",
    "Subscription",
    "UnknownKindError",
    "all_kinds",
    "by_kind",
    "load_documents",
    "load_path",
    "parse_object",
    "resolve",
]

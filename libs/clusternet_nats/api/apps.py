"""apps.clusternet.io/v1alpha1: what to distribute (Subscription, Manifest, HelmChart), how to
override it per cluster (Localization, Globalization) and what lands in each cluster (Base,
Description, HelmRelease), plus the replica inventory the schedulers divide (FeedInventory).

Every field, enum, default, pattern and bound mirrors Clusternet's CRDs so that YAML written
for Clusternet validates here exactly as it would on a Clusternet hub; ``tests/api`` checks the
two agree. The only deliberate loosening: core/v1 Affinity inside FeedInventory is kept as a
free-form mapping, because we carry it along and never interpret it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from clusternet_nats.api.meta import (
    B64Bytes,
    ClusterID,
    ClusterName,
    Condition,
    Feed,
    Int32,
    Int64,
    KubeObject,
    LabelSelector,
    Model,
    NonNegInt32,
    PreferredSchedulingTerm,
    Quantity,
    Toleration,
)
from pydantic import Field, StrictBool, StrictInt

APPS_GROUP = "apps.clusternet.io"
APPS_VERSION = "v1alpha1"

HELM_REPO_PATTERN = (
    r"^(http|https|oci)?://(?:[a-zA-Z]|[0-9]|[$-_@.&+]|[!*\(\),]|(?:%[0-9a-fA-F][0-9a-fA-F]))+$"
)


class AppsObject(KubeObject):
    GROUP = APPS_GROUP
    VERSION = APPS_VERSION


# ---------------------------------------------------------------------------------------------
# Subscription


class SchedulingStrategy(StrEnum):
    REPLICATION = "Replication"
    DIVIDING = "Dividing"


class DividingType(StrEnum):
    STATIC = "Static"
    DYNAMIC = "Dynamic"


class DynamicDividingStrategy(StrEnum):
    SPREAD = "Spread"
    BINPACK = "Binpack"


class PreemptionPolicy(StrEnum):
    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
    PREEMPT_NEVER = "PreemptNever"


class SubGroupStrategy(Model):
    """How many clusters to pick from one subscriber group when schedulingBySubGroup is set."""

    min_clusters: NonNegInt32 | None = None


class Subscriber(Model):
    """A group of clusters selected by labels, with its static-dividing weight."""

    cluster_affinity: LabelSelector
    weight: NonNegInt32 | None = None
    sub_group_strategy: SubGroupStrategy | None = None


class TopologySpreadConstraint(Model):
    """core/v1 TopologySpreadConstraint, applied to clusters instead of nodes."""

    max_skew: Int32
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


class DynamicDividing(Model):
    strategy: DynamicDividingStrategy = DynamicDividingStrategy.SPREAD
    min_clusters: Int32 | None = None
    max_clusters: Int32 | None = None
    preferred_clusters: list[PreferredSchedulingTerm] | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None


class DividingScheduling(Model):
    type: DividingType = DividingType.STATIC
    dynamic_dividing: DynamicDividing | None = None


class SubscriptionSpec(Model):
    subscribers: list[Subscriber]
    feeds: list[Feed]
    scheduling_strategy: SchedulingStrategy = SchedulingStrategy.REPLICATION
    dividing_scheduling: DividingScheduling | None = None
    scheduling_by_sub_group: StrictBool | None = None
    cluster_tolerations: list[Toleration] | None = None
    priority: Int32 | None = None
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    scheduler_name: str = "default"


class ReplicaStatus(Model):
    """The replica counters of a workload's status, summed or per cluster."""

    observed_generation: Int64 | None = None
    replicas: Int32 | None = None
    updated_replicas: Int32 | None = None
    current_replicas: Int32 | None = None
    ready_replicas: Int32 | None = None
    available_replicas: Int32 | None = None
    unavailable_replicas: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    active: Int32 | None = None


class FeedStatus(Model):
    available: StrictBool | None = None
    replica_status: ReplicaStatus | None = None


class FeedStatusPerCluster(FeedStatus):
    cluster_id: ClusterID | None = None
    cluster_name: ClusterName | None = None


class AggregatedStatus(Feed):
    """One feed's status across all the clusters it was deployed to."""

    feed_status_summary: FeedStatus | None = None
    feed_status_details: list[FeedStatusPerCluster] | None = None


class SubscriptionStatus(Model):
    binding_clusters: list[str] | None = None
    replicas: dict[str, list[Int32]] | None = None
    """Per feed, the replicas given to each cluster, in bindingClusters order."""
    spec_hash: Int64 | None = None
    desired_releases: StrictInt | None = None
    completed_releases: StrictInt | None = None
    aggregated_statuses: list[AggregatedStatus] | None = None
    # Not in Clusternet's status (it says why only in Events); optional, so its users' JSON still fits.
    conditions: list[Condition] | None = None
    """`Scheduled`: True when every replica is placed; False with the reason why not (as PodScheduled)."""
    unscheduled_replicas: dict[str, NonNegInt32] | None = None
    """Per feed key, the desired replicas no cluster had room for."""
    predicted_replicas: dict[str, list[NonNegInt32 | None]] | None = None
    """Per feed key, what the predictor said each bound cluster can hold, in bindingClusters order."""
    draining_clusters: list[str] | None = None
    """Bound clusters kept only until the replicas moved off them are available elsewhere (failover)."""


class Subscription(AppsObject):
    """Which resources (feeds) go to which clusters (subscribers), replicated or divided."""

    KIND = "Subscription"
    PLURAL = "subscriptions"
    SHORT_NAMES = ("sub", "subs")
    HAS_STATUS = True

    spec: SubscriptionSpec
    status: SubscriptionStatus = Field(default_factory=SubscriptionStatus)


# ---------------------------------------------------------------------------------------------
# Base and Description: a Subscription's feeds bound to one cluster, then rendered for it


class BaseSpec(Model):
    feeds: list[Feed]


class Base(AppsObject):
    """The feeds of one Subscription for one cluster, before overrides are applied."""

    KIND = "Base"
    PLURAL = "bases"

    spec: BaseSpec


class DeployerType(StrEnum):
    HELM = "Helm"
    GENERIC = "Generic"


class ChartReference(Model):
    name: str
    namespace: str


class DescriptionSpec(Model):
    deployer: DeployerType
    raw: list[B64Bytes] | None = None
    """Rendered objects as JSON, one per entry (Generic deployer)."""
    chart_raw: list[B64Bytes] | None = None
    """Rendered HelmCharts as JSON, one per entry (Helm deployer)."""
    charts: list[ChartReference] | None = None


class DescriptionPhase(StrEnum):
    PENDING = "Pending"
    SUCCESS = "Success"
    FAILURE = "Failure"
    INSTALLING = "Installing"
    UPGRADING = "Upgrading"
    UNINSTALLING = "Uninstalling"
    SUPERSEDED = "Superseded"
    UNKNOWN = "Unknown"


class ManifestStatus(Feed):
    observed_status: dict[str, Any] | None = None


class DescriptionStatus(Model):
    phase: DescriptionPhase | None = None
    reason: str | None = None
    manifest_statuses: list[ManifestStatus] | None = None


class Description(AppsObject):
    """Fully rendered resources for one cluster; what the agent or deployer applies."""

    KIND = "Description"
    PLURAL = "descriptions"
    SHORT_NAMES = ("desc",)
    HAS_STATUS = True

    spec: DescriptionSpec
    status: DescriptionStatus = Field(default_factory=DescriptionStatus)


# ---------------------------------------------------------------------------------------------
# Manifest: any Kubernetes object, stored as-is so Subscriptions can name it as a feed


class Manifest(AppsObject):
    """A raw Kubernetes object held by the hub (Clusternet's shadow API stores these)."""

    KIND = "Manifest"
    PLURAL = "manifests"

    template: dict[str, Any]


# ---------------------------------------------------------------------------------------------
# HelmChart and HelmRelease


class ChartPullSecret(Model):
    name: str | None = None
    namespace: str | None = None


class HelmOptions(Model):
    """Where a chart comes from and how Helm installs it; shared by HelmChart and HelmRelease."""

    repo: Annotated[str, Field(pattern=HELM_REPO_PATTERN)]
    chart: str
    target_namespace: str
    version: str | None = None
    chart_pull_secret: ChartPullSecret | None = None
    create_namespace: StrictBool = True
    timeout_seconds: Int32 = 300
    atomic: StrictBool | None = None
    upgrade_atomic: StrictBool | None = None
    wait: StrictBool | None = None
    wait_for_job: StrictBool | None = None
    disable_hooks: StrictBool | None = None
    force: StrictBool | None = None
    replace: StrictBool | None = None
    plain_http: StrictBool | None = Field(default=None, alias="plainHTTP")
    replace_crds: StrictBool | None = Field(default=None, alias="replaceCRDs")
    skip_crds: StrictBool | None = Field(default=None, alias="skipCRDs")


class HelmChartPhase(StrEnum):
    FOUND = "Found"
    NOT_FOUND = "NotFound"


class HelmChartStatus(Model):
    phase: HelmChartPhase | None = None
    reason: str | None = None


class HelmChart(AppsObject):
    """A Helm chart (in a repo or OCI registry) that Subscriptions can feed to clusters."""

    KIND = "HelmChart"
    PLURAL = "helmcharts"
    SHORT_NAMES = ("chart", "charts")
    HAS_STATUS = True

    spec: HelmOptions
    status: HelmChartStatus = Field(default_factory=HelmChartStatus)


class HelmReleaseSpec(HelmOptions):
    release_name: str | None = None
    overrides: B64Bytes | None = None
    """Merged Helm values (YAML/JSON) from Localizations and Globalizations."""


class HelmReleaseStatus(Model):
    first_deployed: str | None = None
    last_deployed: str | None = None
    description: str | None = None
    phase: str | None = None
    version: StrictInt | None = None
    notes: str | None = None


class HelmRelease(AppsObject):
    """One chart installed into one cluster, with its values overrides resolved."""

    KIND = "HelmRelease"
    PLURAL = "helmreleases"
    SHORT_NAMES = ("hr",)
    HAS_STATUS = True

    spec: HelmReleaseSpec
    status: HelmReleaseStatus = Field(default_factory=HelmReleaseStatus)


# ---------------------------------------------------------------------------------------------
# Localization and Globalization: overrides


class OverridePolicy(StrEnum):
    APPLY_NOW = "ApplyNow"
    APPLY_LATER = "ApplyLater"


class OverrideType(StrEnum):
    HELM = "Helm"
    JSON_PATCH = "JSONPatch"
    MERGE_PATCH = "MergePatch"
    FIELD_JSON_PATCH = "FieldJSONPatch"
    FIELD_MERGE_PATCH = "FieldMergePatch"


class FieldFormat(StrEnum):
    YAML = "YAML"
    JSON = "JSON"


class OverrideConfig(Model):
    type: OverrideType
    value: str
    """The patch (or Helm values) as YAML or JSON text."""
    name: str | None = None
    override_chart: StrictBool | None = None
    field_path: str | None = None
    field_format: FieldFormat | None = None


class OverrideSpec(Model):
    """What Localization and Globalization share: which feed, which patches, in which order."""

    feed: Feed | None = None
    priority: Annotated[int, Field(strict=True, ge=0, le=1000)] = 500
    override_policy: OverridePolicy = OverridePolicy.APPLY_LATER
    overrides: list[OverrideConfig] | None = None


class Localization(AppsObject):
    """Overrides for one feed in the one cluster whose dedicated namespace holds it."""

    KIND = "Localization"
    PLURAL = "localizations"
    SHORT_NAMES = ("loc", "local")

    spec: OverrideSpec


class GlobalizationSpec(OverrideSpec):
    cluster_affinity: LabelSelector | None = None


class Globalization(AppsObject):
    """Overrides for one feed in every cluster its clusterAffinity selects (or all clusters)."""

    KIND = "Globalization"
    PLURAL = "globalizations"
    SHORT_NAMES = ("glob", "global")
    NAMESPACED = False

    spec: GlobalizationSpec


# ---------------------------------------------------------------------------------------------
# FeedInventory


class ResourceClaim(Model):
    name: str
    request: str | None = None


class ResourceRequirements(Model):
    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[ResourceClaim] | None = None


class ReplicaRequirements(Model):
    """What one replica of a workload needs, for the predictor to count what fits in a cluster."""

    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None
    affinity: dict[str, Any] | None = None
    """core/v1 Affinity as written; the predictor reads its required node affinity."""
    resources: ResourceRequirements | None = None
    priority_class_name: str | None = None
    """The pod template's priorityClassName (Clusternet's ReplicaRequirements lacks it)."""


class FeedOrder(Feed):
    desired_replicas: Int32 | None = None
    replica_requirements: ReplicaRequirements | None = None
    replica_json_path: str | None = None


class FeedInventorySpec(Model):
    feeds: list[FeedOrder]


class FeedInventory(AppsObject):
    """Each feed of a Subscription with its desired replicas and per-replica requirements."""

    KIND = "FeedInventory"
    PLURAL = "feedinventories"
    SHORT_NAMES = ("finv",)

    spec: FeedInventorySpec


APPS_KINDS: tuple[type[KubeObject], ...] = (
    Subscription,
    Base,
    Description,
    Manifest,
    HelmChart,
    HelmRelease,
    Localization,
    Globalization,
    FeedInventory,
)

__all__ = [
    "APPS_GROUP",
    "APPS_KINDS",
    "APPS_VERSION",
    "AggregatedStatus",
    "Base",
    "BaseSpec",
    "ChartPullSecret",
    "ChartReference",
    "DeployerType",
    "Description",
    "DescriptionPhase",
    "DescriptionSpec",
    "DescriptionStatus",
    "DividingScheduling",
    "DividingType",
    "DynamicDividing",
    "DynamicDividingStrategy",
    "FeedInventory",
    "FeedInventorySpec",
    "FeedOrder",
    "FeedStatus",
    "FeedStatusPerCluster",
    "FieldFormat",
    "Globalization",
    "GlobalizationSpec",
    "HelmChart",
    "HelmChartPhase",
    "HelmChartStatus",
    "HelmOptions",
    "HelmRelease",
    "HelmReleaseSpec",
    "HelmReleaseStatus",
    "Localization",
    "Manifest",
    "ManifestStatus",
    "OverrideConfig",
    "OverridePolicy",
    "OverrideSpec",
    "OverrideType",
    "PreemptionPolicy",
    "ReplicaRequirements",
    "ReplicaStatus",
    "ResourceClaim",
    "ResourceRequirements",
    "SchedulingStrategy",
    "SubGroupStrategy",
    "Subscriber",
    "Subscription",
    "SubscriptionSpec",
    "SubscriptionStatus",
    "TopologySpreadConstraint",
]

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
    """MinClusters is the minimum number of clusters to be selected in this subgroup. If this value is more than the
    total number of clusters in this subgroup, then all clusters will be selected."""


class Subscriber(Model):
    """A group of clusters selected by labels, with its static-dividing weight."""

    cluster_affinity: LabelSelector
    """ClusterAffinity is a label query over managed clusters by labels."""
    weight: NonNegInt32 | None = None
    """Static weight of subscriber when dividing replicas. Present only for static divided scheduling."""
    sub_group_strategy: SubGroupStrategy | None = None
    """SubGroupStrategy defines the subgroup strategy for the clusters matched by this subscriber. During the
    scheduling, all the matching clusters will be treated as a subgroup instead of individual clusters. With
    subgroup, we can describe clusters with different regions, zones, etc. Present only when SchedulingBySubGroup is
    set."""


class TopologySpreadConstraint(Model):
    """core/v1 TopologySpreadConstraint, applied to clusters instead of nodes."""

    max_skew: Int32
    """MaxSkew describes the degree to which pods may be unevenly distributed. When `whenUnsatisfiable=DoNotSchedule`,
    it is the maximum permitted difference between the number of matching pods in the target topology and the global
    minimum. The global minimum is the minimum number of matching pods in an eligible domain or zero if the number of
    eligible domains is less than MinDomains. For example, in a 3-zone cluster, MaxSkew is set to 1, and pods with
    the same labelSelector spread as 2/2/1: In this case, the global minimum is 1. | zone1 | zone2 | zone3 | | P P |
    P P | P | - if MaxSkew is 1, incoming pod can only be scheduled to zone3 to become 2/2/2; scheduling it onto
    zone1(zone2) would make the ActualSkew(3-1) on zone1(zone2) violate MaxSkew(1). - if MaxSkew is 2, incoming pod
    can be scheduled onto any zone. When `whenUnsatisfiable=ScheduleAnyway`, it is used to give higher precedence to
    topologies that satisfy it. It's a required field. Default value is 1 and 0 is not allowed."""
    topology_key: str
    """TopologyKey is the key of node labels. Nodes that have a label with this key and identical values are considered
    to be in the same topology. We consider each <key, value> as a "bucket", and try to put balanced number of pods
    into each bucket. We define a domain as a particular instance of a topology. Also, we define an eligible domain
    as a domain whose nodes meet the requirements of nodeAffinityPolicy and nodeTaintsPolicy. e.g. If TopologyKey is
    "kubernetes.io/hostname", each Node is a domain of that topology. And, if TopologyKey is
    "topology.kubernetes.io/zone", each zone is a domain of that topology. It's a required field."""
    when_unsatisfiable: str
    """WhenUnsatisfiable indicates how to deal with a pod if it doesn't satisfy the spread constraint. - DoNotSchedule
    (default) tells the scheduler not to schedule it. - ScheduleAnyway tells the scheduler to schedule the pod in any
    location, but giving higher precedence to topologies that would help reduce the skew. A constraint is considered
    "Unsatisfiable" for an incoming pod if and only if every possible node assignment for that pod would violate
    "MaxSkew" on some topology. For example, in a 3-zone cluster, MaxSkew is set to 1, and pods with the same
    labelSelector spread as 3/1/1: | zone1 | zone2 | zone3 | | P P P | P | P | If WhenUnsatisfiable is set to
    DoNotSchedule, incoming pod can only be scheduled to zone2(zone3) to become 3/2/1(3/1/2) as ActualSkew(2-1) on
    zone2(zone3) satisfies MaxSkew(1). In other words, the cluster can still be imbalanced, but scheduler won't make
    it *more* imbalanced. It's a required field."""
    label_selector: LabelSelector | None = None
    """LabelSelector is used to find matching pods. Pods that match this label selector are counted to determine the
    number of pods in their corresponding topology domain."""
    min_domains: Int32 | None = None
    """MinDomains indicates a minimum number of eligible domains. When the number of eligible domains with matching
    topology keys is less than minDomains, Pod Topology Spread treats "global minimum" as 0, and then the calculation
    of Skew is performed. And when the number of eligible domains with matching topology keys equals or greater than
    minDomains, this value has no effect on scheduling. As a result, when the number of eligible domains is less than
    minDomains, scheduler won't schedule more than maxSkew Pods to those domains. If value is nil, the constraint
    behaves as if MinDomains is equal to 1. Valid values are integers greater than 0. When value is not nil,
    WhenUnsatisfiable must be DoNotSchedule. For example, in a 3-zone cluster, MaxSkew is set to 2, MinDomains is set
    to 5 and pods with the same labelSelector spread as 2/2/2: | zone1 | zone2 | zone3 | | P P | P P | P P | The
    number of domains is less than 5(MinDomains), so "global minimum" is treated as 0. In this situation, new pod
    with the same labelSelector cannot be scheduled, because computed skew will be 3(3 - 0) if new Pod is scheduled
    to any of the three zones, it will violate MaxSkew."""
    node_affinity_policy: str | None = None
    """NodeAffinityPolicy indicates how we will treat Pod's nodeAffinity/nodeSelector when calculating pod topology
    spread skew. Options are: - Honor: only nodes matching nodeAffinity/nodeSelector are included in the
    calculations. - Ignore: nodeAffinity/nodeSelector are ignored. All nodes are included in the calculations. If
    this value is nil, the behavior is equivalent to the Honor policy. This is a beta-level feature default enabled
    by the NodeInclusionPolicyInPodTopologySpread feature flag."""
    node_taints_policy: str | None = None
    """NodeTaintsPolicy indicates how we will treat node taints when calculating pod topology spread skew. Options are:
    - Honor: nodes without taints, along with tainted nodes for which the incoming pod has a toleration, are
    included. - Ignore: node taints are ignored. All nodes are included. If this value is nil, the behavior is
    equivalent to the Ignore policy. This is a beta-level feature default enabled by the
    NodeInclusionPolicyInPodTopologySpread feature flag."""
    match_label_keys: list[str] | None = None
    """MatchLabelKeys is a set of pod label keys to select the pods over which spreading will be calculated. The keys
    are used to lookup values from the incoming pod labels, those key-value labels are ANDed with labelSelector to
    select the group of existing pods over which spreading will be calculated for the incoming pod. The same key is
    forbidden to exist in both MatchLabelKeys and LabelSelector. MatchLabelKeys cannot be set when LabelSelector
    isn't set. Keys that don't exist in the incoming pod labels will be ignored. A null or empty list means only
    match against labelSelector. This is a beta field and requires the MatchLabelKeysInPodTopologySpread feature gate
    to be enabled (enabled by default)."""


class DynamicDividing(Model):
    strategy: DynamicDividingStrategy = DynamicDividingStrategy.SPREAD
    """Type of dynamic dividing replica strategy."""
    min_clusters: Int32 | None = None
    """MinClusters describes the lower bound number of target clusters."""
    max_clusters: Int32 | None = None
    """MaxClusters describes the upper bound number of target clusters."""
    preferred_clusters: list[PreferredSchedulingTerm] | None = None
    """PreferredClusters describes the assigning preference. If we have a preference for cluster group A compared to
    cluster group B (i.e., group A has a larger Weight), desired replicas will be assigned to cluster group A as many
    as possible, while the rest ones will be assigned to cluster group B."""
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    """TopologySpreadConstraints describes how a group of replicas ought to spread across topology domains. Scheduler
    will schedule pods in a way which abides by the constraints. All topologySpreadConstraints are ANDed. Present
    only for spread divided scheduling."""


class DividingScheduling(Model):
    type: DividingType = DividingType.STATIC
    """Type of dividing replica scheduling."""
    dynamic_dividing: DynamicDividing | None = None
    """DynamicDividing describes how to divide replicas into target clusters dynamically."""


class SubscriptionSpec(Model):
    subscribers: list[Subscriber]
    """Subscribers subscribes"""
    feeds: list[Feed]
    """Feeds"""
    scheduling_strategy: SchedulingStrategy = SchedulingStrategy.REPLICATION
    """If specified, the Subscription will be handled with specified SchedulingStrategy. Otherwise, with generic
    SchedulingStrategy."""
    dividing_scheduling: DividingScheduling | None = None
    """Dividing scheduling config params. Present only if SchedulingStrategy = Dividing."""
    scheduling_by_sub_group: StrictBool | None = None
    """If specified, the Subscription will be handled with SchedulingBySubGroup. Used together with SubGroupStrategy in
    every Subscriber. Can work with all supported SchedulingStrategy, such as Replication, Dividing."""
    cluster_tolerations: list[Toleration] | None = None
    """ClusterTolerations tolerates any matched taints of ManagedCluster."""
    priority: Int32 | None = None
    """The priority value. clusternet-scheduler use this field to find the priority of the subscription. The higher the
    value, the higher the priority."""
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    """PreemptionPolicy is the Policy for preempting subscriptions with lower priority. One of Never,
    PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."""
    scheduler_name: str = "default"
    """If specified, the Subscription will be handled by specified scheduler. If not specified, the Subscription will be
    handled by default scheduler."""


class ReplicaStatus(Model):
    """The replica counters of a workload's status, summed or per cluster."""

    observed_generation: Int64 | None = None
    """The generation observed by the workload controller."""
    replicas: Int32 | None = None
    """Total number of non-terminated pods targeted by this workload (their labels match the selector)."""
    updated_replicas: Int32 | None = None
    """Total number of non-terminated pods targeted by this workload that have the desired template spec."""
    current_replicas: Int32 | None = None
    """currentReplicas is the number of Pods created by the workload controller from the StatefulSet version indicated
    by currentRevision."""
    ready_replicas: Int32 | None = None
    """readyReplicas is the number of pods targeted by this workload with a Ready Condition."""
    available_replicas: Int32 | None = None
    """Total number of available pods (ready for at least minReadySeconds) targeted by this workload."""
    unavailable_replicas: Int32 | None = None
    """Total number of unavailable pods targeted by this workload. This is the total number of pods that are still
    required for the workload to have 100% available capacity. They may either be pods that are running but not yet
    available or pods that still have not been created."""
    succeeded: Int32 | None = None
    """The number of pods which reached phase Succeeded."""
    failed: Int32 | None = None
    """The number of pods which reached phase Failed."""
    active: Int32 | None = None
    """The number of pending and running pods."""


class FeedStatus(Model):
    available: StrictBool | None = None
    """Available indicates whether the feed status is synced successfully to corresponding Description."""
    replica_status: ReplicaStatus | None = None
    """ReplicaStatus indicates the replica status of workload-type feed, such as Deployment/StatefulSet/Job."""


class FeedStatusPerCluster(FeedStatus):
    cluster_id: ClusterID | None = None
    """ClusterID indicates the id of current cluster."""
    cluster_name: ClusterName | None = None
    """ClusterName is the cluster name."""


class AggregatedStatus(Feed):
    """One feed's status across all the clusters it was deployed to."""

    feed_status_summary: FeedStatus | None = None
    """FeedStatusSummary aggregates the feed statuses from each child cluster."""
    feed_status_details: list[FeedStatusPerCluster] | None = None
    """FeedStatusDetails shows the feed statuses in each child cluster."""


class SubscriptionStatus(Model):
    binding_clusters: list[str] | None = None
    """Namespaced names of targeted clusters that Subscription binds to."""
    replicas: dict[str, list[Int32]] | None = None
    """Per feed, the replicas given to each cluster, in bindingClusters order."""
    spec_hash: Int64 | None = None
    """SpecHash calculates the hash value of current SubscriptionSpec."""
    desired_releases: StrictInt | None = None
    """Total number of Helm releases desired by this Subscription."""
    completed_releases: StrictInt | None = None
    """Total number of completed releases targeted by this Subscription."""
    aggregated_statuses: list[AggregatedStatus] | None = None
    """AggregatedStatuses shows the aggregated statuses of feeds that are running in each child cluster."""
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
    """SubscriptionSpec defines the desired state of Subscription"""
    status: SubscriptionStatus = Field(default_factory=SubscriptionStatus)
    """SubscriptionStatus defines the observed state of Subscription"""


# ---------------------------------------------------------------------------------------------
# Base and Description: a Subscription's feeds bound to one cluster, then rendered for it


class BaseSpec(Model):
    feeds: list[Feed]
    """Feeds"""


class Base(AppsObject):
    """The feeds of one Subscription for one cluster, before overrides are applied."""

    KIND = "Base"
    PLURAL = "bases"

    spec: BaseSpec
    """BaseSpec defines the desired state of Base"""


class DeployerType(StrEnum):
    HELM = "Helm"
    GENERIC = "Generic"


class ChartReference(Model):
    name: str
    """Name of the HelmChart."""
    namespace: str
    """Namespace of the HelmChart."""


class DescriptionSpec(Model):
    deployer: DeployerType
    """Deployer indicates the deployer for this Description"""
    raw: list[B64Bytes] | None = None
    """Rendered objects as JSON, one per entry (Generic deployer)."""
    chart_raw: list[B64Bytes] | None = None
    """Rendered HelmCharts as JSON, one per entry (Helm deployer)."""
    charts: list[ChartReference] | None = None
    """Charts describe all the helm charts to be installed"""


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
    """ObservedStatus reflects observed status of current feed."""


class DescriptionStatus(Model):
    phase: DescriptionPhase | None = None
    """Phase denotes the phase of Description"""
    reason: str | None = None
    """Reason indicates the reason of DescriptionPhase"""
    manifest_statuses: list[ManifestStatus] | None = None
    """ManifestStatuses contains a list of running statuses of manifests in DescriptionSpec."""


class Description(AppsObject):
    """Fully rendered resources for one cluster; what the agent or deployer applies."""

    KIND = "Description"
    PLURAL = "descriptions"
    SHORT_NAMES = ("desc",)
    HAS_STATUS = True

    spec: DescriptionSpec
    """DescriptionSpec defines the spec of Description"""
    status: DescriptionStatus = Field(default_factory=DescriptionStatus)
    """DescriptionStatus defines the observed state of Description"""


# ---------------------------------------------------------------------------------------------
# Manifest: any Kubernetes object, stored as-is so Subscriptions can name it as a feed


class Manifest(AppsObject):
    """A raw Kubernetes object held by the hub (Clusternet's shadow API stores these)."""

    KIND = "Manifest"
    PLURAL = "manifests"

    template: dict[str, Any]
    """Template defines the raw Kubernetes resource"""


# ---------------------------------------------------------------------------------------------
# HelmChart and HelmRelease


class ChartPullSecret(Model):
    name: str | None = None
    namespace: str | None = None


class HelmOptions(Model):
    """Where a chart comes from and how Helm installs it; shared by HelmChart and HelmRelease."""

    repo: Annotated[str, Field(pattern=HELM_REPO_PATTERN)]
    """a Helm Repository to be used. OCI-based registries are also supported. For example,
    https://charts.bitnami.com/bitnami or oci://localhost:5000/helm-charts"""
    chart: str
    """Chart is the name of a Helm Chart in the Repository."""
    target_namespace: str
    """TargetNamespace specifies the namespace to install this HelmChart"""
    version: str | None = None
    """ChartVersion is the version of the chart to be deployed. It will be defaulted with current latest version if
    empty."""
    chart_pull_secret: ChartPullSecret | None = None
    """ChartPullSecret is the name of the secret that contains the auth information for the chart repository."""
    create_namespace: StrictBool = True
    """CreateNamespace create namespace when install helm release"""
    timeout_seconds: Int32 = 300
    """TimeoutSeconds is the timeout of the chart to be install/upgrade/rollback/uninstall"""
    atomic: StrictBool | None = None
    """Atomic, for install case, if true, will uninstall failed release."""
    upgrade_atomic: StrictBool | None = None
    """UpgradeAtomic, for upgrade case, if true, will roll back failed release."""
    wait: StrictBool | None = None
    """Wait determines whether the wait operation should be performed after helm install, upgrade or uninstall is
    requested."""
    wait_for_job: StrictBool | None = None
    """WaitForJobs determines whether the wait operation for the Jobs should be performed after the upgrade is
    requested."""
    disable_hooks: StrictBool | None = None
    """DisableHooks disables hook processing if set to true."""
    force: StrictBool | None = None
    """Force will, if set to `true`, ignore certain warnings and perform the upgrade anyway. This should be used with
    caution."""
    replace: StrictBool | None = None
    """Replace will re-use the given name, only if that name is a deleted release that remains in the history. This is
    unsafe in production."""
    plain_http: StrictBool | None = Field(default=None, alias="plainHTTP")
    """PlainHTTP enables plain HTTP for OCI registries. This is opt-in and should only be used for registries that do
    not serve HTTPS."""
    replace_crds: StrictBool | None = Field(default=None, alias="replaceCRDs")
    """ReplaceCRDs replace all crds in chart and sub charts before upgrade and install, not working when SkipCRDs true
    """
    skip_crds: StrictBool | None = Field(default=None, alias="skipCRDs")
    """SkipCRDs skips installing CRDs when install flag is enabled during upgrade"""


class HelmChartPhase(StrEnum):
    FOUND = "Found"
    NOT_FOUND = "NotFound"


class HelmChartStatus(Model):
    phase: HelmChartPhase | None = None
    """Phase denotes the phase of HelmChart"""
    reason: str | None = None
    """Reason indicates the reason of HelmChartPhase"""


class HelmChart(AppsObject):
    """A Helm chart (in a repo or OCI registry) that Subscriptions can feed to clusters."""

    KIND = "HelmChart"
    PLURAL = "helmcharts"
    SHORT_NAMES = ("chart", "charts")
    HAS_STATUS = True

    spec: HelmOptions
    """HelmChartSpec defines the spec of HelmChart"""
    status: HelmChartStatus = Field(default_factory=HelmChartStatus)
    """HelmChartStatus defines the observed state of HelmChart"""


class HelmReleaseSpec(HelmOptions):
    release_name: str | None = None
    """ReleaseName specifies the desired release name in child cluster. If nil, the default release name will be in the
    format of "{Description Name}-{HelmChart Namespace}-{HelmChart Name}\""""
    overrides: B64Bytes | None = None
    """Merged Helm values (YAML/JSON) from Localizations and Globalizations."""


class HelmReleaseStatus(Model):
    first_deployed: str | None = None
    """FirstDeployed is when the release was first deployed."""
    last_deployed: str | None = None
    """LastDeployed is when the release was last deployed."""
    description: str | None = None
    """Description is human-friendly "log entry" about this release."""
    phase: str | None = None
    """Phase is the current state of the release"""
    version: StrictInt | None = None
    """Version is an int which represents the revision of the release."""
    notes: str | None = None
    """Contains the rendered templates/NOTES.txt if available"""


class HelmRelease(AppsObject):
    """One chart installed into one cluster, with its values overrides resolved."""

    KIND = "HelmRelease"
    PLURAL = "helmreleases"
    SHORT_NAMES = ("hr",)
    HAS_STATUS = True

    spec: HelmReleaseSpec
    """HelmReleaseSpec defines the spec of HelmRelease"""
    status: HelmReleaseStatus = Field(default_factory=HelmReleaseStatus)
    """HelmReleaseStatus defines the observed state of HelmRelease"""


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
    """Type specifies the override type for override value."""
    value: str
    """The patch (or Helm values) as YAML or JSON text."""
    name: str | None = None
    """Name indicate the OverrideConfig name."""
    override_chart: StrictBool | None = None
    """OverrideChart indicates whether the override value for the HelmChart CR."""
    field_path: str | None = None
    """FieldPath indicates the field path for the override value for FieldPatch."""
    field_format: FieldFormat | None = None
    """FieldFormat indicates the field format for the override value for FieldPatch."""


class OverrideSpec(Model):
    """What Localization and Globalization share: which feed, which patches, in which order."""

    feed: Feed | None = None
    """Feed holds references to the objects the Localization applies to."""
    priority: Annotated[int, Field(strict=True, ge=0, le=1000)] = 500
    """Priority is an integer defining the relative importance of this Localization compared to others. Lower numbers
    are considered lower priority. And these Localization(s) will be applied by order from lower priority to higher.
    That means override values in lower Localization will be overridden by those in higher Localization."""
    override_policy: OverridePolicy = OverridePolicy.APPLY_LATER
    """OverridePolicy specifies the override policy for this Localization."""
    overrides: list[OverrideConfig] | None = None
    """Overrides holds all the OverrideConfig."""


class Localization(AppsObject):
    """Overrides for one feed in the one cluster whose dedicated namespace holds it."""

    KIND = "Localization"
    PLURAL = "localizations"
    SHORT_NAMES = ("loc", "local")

    spec: OverrideSpec
    """LocalizationSpec defines the desired state of Localization"""


class GlobalizationSpec(OverrideSpec):
    cluster_affinity: LabelSelector | None = None
    """ClusterAffinity is a label query over managed clusters by labels. If no labels are specified, all clusters will
    be selected."""


class Globalization(AppsObject):
    """Overrides for one feed in every cluster its clusterAffinity selects (or all clusters)."""

    KIND = "Globalization"
    PLURAL = "globalizations"
    SHORT_NAMES = ("glob", "global")
    NAMESPACED = False

    spec: GlobalizationSpec
    """GlobalizationSpec defines the desired state of Globalization"""


# ---------------------------------------------------------------------------------------------
# FeedInventory


class ResourceClaim(Model):
    name: str
    """Name must match the name of one entry in pod.spec.resourceClaims of the Pod where this field is used. It makes
    that resource available inside a container."""
    request: str | None = None
    """Request is the name chosen for a request in the referenced claim. If empty, everything from the claim is made
    available, otherwise only the result of this request."""


class ResourceRequirements(Model):
    limits: dict[str, Quantity] | None = None
    """Limits describes the maximum amount of compute resources allowed. More info:
    https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"""
    requests: dict[str, Quantity] | None = None
    """Requests describes the minimum amount of compute resources required. If Requests is omitted for a container, it
    defaults to Limits if that is explicitly specified, otherwise to an implementation-defined value. Requests cannot
    exceed Limits. More info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"""
    claims: list[ResourceClaim] | None = None
    """Claims lists the names of resources, defined in spec.resourceClaims, that are used by this container. This is an
    alpha field and requires enabling the DynamicResourceAllocation feature gate. This field is immutable. It can
    only be set for containers."""


class ReplicaRequirements(Model):
    """What one replica of a workload needs, for the predictor to count what fits in a cluster."""

    node_selector: dict[str, str] | None = None
    """NodeSelector specifies hard node constraints that must be met for a new replica to fit on a node. Selector which
    must match a node's labels for a new replica to be scheduled on that node."""
    tolerations: list[Toleration] | None = None
    """Tolerations specifies the tolerations of a new replica."""
    affinity: dict[str, Any] | None = None
    """core/v1 Affinity as written; the predictor reads its required node affinity."""
    resources: ResourceRequirements | None = None
    """Resources describes the compute resource requirements."""
    priority_class_name: str | None = None
    """The pod template's priorityClassName (Clusternet's ReplicaRequirements lacks it)."""


class FeedOrder(Feed):
    desired_replicas: Int32 | None = None
    """DesiredReplicas specifies the number of desired replica. This is a pointer to distinguish between explicit zero
    and not specified."""
    replica_requirements: ReplicaRequirements | None = None
    """ReplicaRequirements describes the scheduling requirements for a new replica."""
    replica_json_path: str | None = None
    """ReplicaJsonPath specifies the JSONPath for replica settings, such as `/spec/replicas` for
    Deployment/StatefulSet/ReplicaSet. Should not be empty when DesiredReplicas is non-nil."""


class FeedInventorySpec(Model):
    feeds: list[FeedOrder]


class FeedInventory(AppsObject):
    """Each feed of a Subscription with its desired replicas and per-replica requirements."""

    KIND = "FeedInventory"
    PLURAL = "feedinventories"
    SHORT_NAMES = ("finv",)

    spec: FeedInventorySpec
    """FeedInventorySpec defines the desired state of FeedInventory."""


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

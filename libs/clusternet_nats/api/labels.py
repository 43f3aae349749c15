"""Label keys Clusternet puts on the objects it derives, reused verbatim so selectors carry over."""

RESERVED_NAMESPACE = "clusternet-reserved"

CREATED_BY = "clusternet.io/created-by"
CONFIG_GROUP = "apps.clusternet.io/config.group"
CONFIG_VERSION = "apps.clusternet.io/config.version"
CONFIG_KIND = "apps.clusternet.io/config.kind"
CONFIG_NAME = "apps.clusternet.io/config.name"
CONFIG_NAMESPACE = "apps.clusternet.io/config.namespace"
CONFIG_UID = "apps.clusternet.io/config.uid"
SUBS_NAME = "apps.clusternet.io/subs.name"
SUBS_NAMESPACE = "apps.clusternet.io/subs.namespace"
SUBS_UID = "apps.clusternet.io/subs.uid"

CLUSTER_ID = "clusters.clusternet.io/cluster-id"
CLUSTER_NAME = "clusters.clusternet.io/cluster-name"
NODE_LABEL_PREFIX = "node.clusternet.io/"

# Ours: on every object the agent applies, so pruning removes only what it put there.
APPLIED_BY_DESCRIPTION = "apps.clusternet.io/description"
DEPLOYER = "clusternet-deployer"

UNSCHEDULABLE_TAINT = "clusters.clusternet.io/unschedulable"

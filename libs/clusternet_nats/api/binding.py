"""The scheduler's decision for one Subscription, kept in the `bindings` bucket.

It is what Clusternet writes into the Subscription's status (bindingClusters, replicas,
specHash, desiredReleases). Keeping it in its own bucket means the scheduler and the deployer
(which writes aggregatedStatuses and completedReleases) never compare-and-set the same key;
the hub merges both into `status` when a user reads the Subscription.

Beyond Clusternet's four fields it keeps what the scheduler knew when it decided, for users
(`cnet get/describe subs`), all optional: the `Scheduled` condition (why not fully placed), the
replicas no cluster had room for, the predictor's figures for the bound clusters, and the clusters
kept only while a failover's replacement comes up (`draining_clusters`, see scheduler/failover.py).
"""

import json

from clusternet_nats.api.meta import Condition, Model
from pydantic import Field


class SubscriptionBinding(Model):
    subscription_uid: str
    spec_hash: int
    binding_clusters: list[str] = Field(default_factory=list)
    replicas: dict[str, list[int]] = Field(default_factory=dict)
    desired_releases: int = 0
    condition: Condition | None = None
    unscheduled_replicas: dict[str, int] = Field(default_factory=dict)
    """Per feed key, the desired replicas no cluster had room for."""
    predicted_replicas: dict[str, list[int | None]] = Field(default_factory=dict)
    """Per feed key, what the predictor said each bound cluster can hold, in binding_clusters order."""
    draining_clusters: list[str] = Field(default_factory=list)
    """Bound clusters whose share has moved elsewhere, kept until the new placement is available."""


def spec_hash(spec: Model) -> int:
    """A stable hash of a Subscription's spec: FNV-1a 32, Clusternet's specHash algorithm, of our
    sorted JSON (not Go's dump of its JSON), so the value differs from Clusternet's: it is only
    ever compared with another of ours (the binding's against the current spec)."""
    data = json.dumps(spec.to_json_dict(), sort_keys=True, separators=(",", ":")).encode()
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


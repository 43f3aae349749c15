"""Where a feed's desired replicas come from: the spec.replicas of the Manifest holding it.

Clusternet's FeedInventory controller reads spec.replicas only for the workload kinds it has
parsers for (Deployment, ReplicaSet, StatefulSet); any other feed, or a workload without
spec.replicas, has nothing to divide. Manifests are found by their config.* labels, indexed as
the informer reports them, so a lookup is a dict access rather than a scan of every Manifest.
"""

from __future__ import annotations

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Manifest
from clusternet_nats.api.loader import manifest_feed_labels
from clusternet_nats.api.meta import Feed

FeedIdentity = frozenset[tuple[str, str]]

_IDENTITY_LABELS = (
    known.CONFIG_GROUP,
    known.CONFIG_VERSION,
    known.CONFIG_KIND,
    known.CONFIG_NAME,
    known.CONFIG_NAMESPACE,
)

# (apiVersion, kind) of the workloads Clusternet's FeedInventory controller parses.
WORKLOADS = frozenset(
    {
        ("apps/v1", "Deployment"),
        ("apps/v1beta1", "Deployment"),
        ("apps/v1beta2", "Deployment"),
        ("extensions/v1beta1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("extensions/v1beta1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1beta1", "StatefulSet"),
        ("apps/v1beta2", "StatefulSet"),
        ("extensions/v1beta1", "StatefulSet"),
    }
)


class ManifestMissingError(LookupError):
    def __init__(self, feed: Feed) -> None:
        super().__init__(f"{feed.key()} not found: no Manifest in {known.RESERVED_NAMESPACE} holds it yet")
        self.feed = feed


def feed_identity(feed: Feed) -> FeedIdentity:
    return frozenset(manifest_feed_labels(feed).items())


def manifest_identity(manifest: Manifest) -> FeedIdentity:
    labels = manifest.metadata.labels or {}
    return frozenset((key, labels[key]) for key in _IDENTITY_LABELS if key in labels)


def template_replicas(template: dict[str, object]) -> int | None:
    if (template.get("apiVersion"), template.get("kind")) not in WORKLOADS:
        return None
    spec = template.get("spec")
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else None


class FeedManifests:
    """Manifests by the feed they hold; fed by the manifests informer's handler."""

    def __init__(self) -> None:
        self._by_feed: dict[FeedIdentity, tuple[str, Manifest]] = {}
        self._identity_of: dict[str, FeedIdentity] = {}

    def update(self, key: str, manifest: Manifest | None) -> set[FeedIdentity]:
        """Records a change; returns the feeds whose Manifest it changed."""
        changed: set[FeedIdentity] = set()
        old = self._identity_of.pop(key, None)
        if old is not None:
            changed.add(old)
            if self._by_feed.get(old, ("", None))[0] == key:
                del self._by_feed[old]
        if manifest is not None:
            identity = manifest_identity(manifest)
            changed.add(identity)
            self._identity_of[key] = identity
            self._by_feed[identity] = (key, manifest)
        return changed

    def desired_replicas(self, feed: Feed) -> int | None:
        found = self._by_feed.get(feed_identity(feed))
        if found is None:
            raise ManifestMissingError(feed)
        return template_replicas(found[1].template)

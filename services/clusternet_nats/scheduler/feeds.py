"""Where a feed's desired replicas come from: the spec.replicas of the Manifest holding it.

Clusternet's FeedInventory controller reads spec.replicas only for the workload kinds it has
parsers for (Deployment, ReplicaSet, StatefulSet); any other feed, or a workload without
spec.replicas, has nothing to divide. Manifests are indexed by the feed selectors that find them
(`domain.feeds`, the rule every service shares), as the informer reports them, so a lookup is a
dict access rather than a scan of every Manifest. Where several Manifests match (a feed without a
namespace, of a kind whose scope is unknown), the first by key is read, as Clusternet reads the
first its lister returns.
"""

from __future__ import annotations

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Manifest
from clusternet_nats.api.meta import Feed
from clusternet_nats.domain.feeds import Selector, feed_selector, format_feed, manifest_selectors
from clusternet_nats.store.index import Index

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
        super().__init__(f"{format_feed(feed)} not found: no Manifest in {known.RESERVED_NAMESPACE} holds it yet")
        self.feed = feed


def template_replicas(template: dict[str, object]) -> int | None:
    if (template.get("apiVersion"), template.get("kind")) not in WORKLOADS:
        return None
    spec = template.get("spec")
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else None


class FeedManifests:
    """Manifests by the feeds that select them; fed by the manifests informer's handler."""

    def __init__(self) -> None:
        self._manifests: dict[str, Manifest] = {}
        self._index: Index[Manifest, Selector] = Index(manifest_selectors)

    def update(self, key: str, manifest: Manifest | None) -> set[Selector]:
        """Records a change; returns the feed selectors whose Manifest it changed."""
        if manifest is None:
            self._manifests.pop(key, None)
        else:
            self._manifests[key] = manifest
        return self._index.update(key, manifest)

    def desired_replicas(self, feed: Feed) -> int | None:
        keys = self._index.keys_for(feed_selector(feed))
        if not keys:
            raise ManifestMissingError(feed)
        return template_replicas(self._manifests[keys[0]].template)

"""How a feed finds its object: Manifests by Clusternet's config labels, HelmCharts by name.

A feed is identified by its label selector (`loader.manifest_feed_labels`), the same selector
Clusternet lists Manifests with; a feed without a namespace selects the object in any namespace.
The selector doubles as the key of every feed index, so Manifests, HelmCharts, Localizations and
Globalizations all map to the Subscriptions they concern the same way.
"""

from __future__ import annotations

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import HelmChart, Manifest
from clusternet_nats.api.loader import manifest_feed_labels
from clusternet_nats.api.meta import Feed

Selector = frozenset[tuple[str, str]]

_IDENTITY_LABELS = (known.CONFIG_GROUP, known.CONFIG_VERSION, known.CONFIG_KIND, known.CONFIG_NAME)


def feed_selector(feed: Feed) -> Selector:
    return frozenset(manifest_feed_labels(feed).items())


def is_chart_feed(feed: Feed) -> bool:
    return feed.kind == HelmChart.KIND and feed.api_version == HelmChart.api_version_string()


def chart_feed(namespace: str, name: str) -> Feed:
    return Feed(api_version=HelmChart.api_version_string(), kind=HelmChart.KIND, namespace=namespace, name=name)


def manifest_selectors(manifest: Manifest) -> set[Selector]:
    """Every feed selector that matches this Manifest: with its namespace, and without one."""
    labels = manifest.metadata.labels or {}
    if not all(key in labels for key in _IDENTITY_LABELS):
        return set()
    identity = {key: labels[key] for key in _IDENTITY_LABELS}
    selectors = {frozenset(identity.items())}
    if known.CONFIG_NAMESPACE in labels:
        selectors.add(frozenset({**identity, known.CONFIG_NAMESPACE: labels[known.CONFIG_NAMESPACE]}.items()))
    return selectors

"""Which object a Subscription's feed names, and the names a feed goes by.

Clusternet finds a feed's Manifest with a label selector on the Manifest's `config.*` labels
(GetLabelsSelectorFromFeed): group, version, kind, name, and the namespace only when the feed
gives one. The scheduler (a workload's replicas), the deployer (what to render, which overrides
apply), the status aggregation (which applied object reports for the feed) and the bridge (which
parent object to mirror) all ask this module, so they cannot disagree about a feed.

A feed names the object that applying it would have stored (`api.loader`, like kubectl and
Clusternet's shadow API): a feed without a namespace, of a kind known to be namespaced, means the
object in "default"; a namespace given to a cluster-scoped kind is dropped. Of a kind whose scope
is not known without an API server (a custom resource), a feed without a namespace keeps
Clusternet's selector: the object of that name in any namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache, lru_cache

from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import HelmChart, Manifest
from clusternet_nats.api.loader import CLUSTER_SCOPED_KINDS, NAMESPACED_KINDS
from clusternet_nats.api.meta import Feed
from clusternet_nats.api.registry import all_kinds

DEFAULT_NAMESPACE = "default"

_IDENTITY_LABELS = (known.CONFIG_GROUP, known.CONFIG_VERSION, known.CONFIG_KIND, known.CONFIG_NAME)


@dataclass(frozen=True)
class Selector:
    """The object a feed names; `namespace` None: cluster-scoped, or (scope unknown) any namespace.

    Hashable, so it keys the indexes that map Manifests, Localizations and Globalizations to the
    Subscriptions whose feeds they concern.
    """

    api_version: str
    kind: str
    namespace: str | None
    name: str


@cache
def kind_is_namespaced(api_version: str, kind: str) -> bool | None:
    """The scope of a kind as far as it is known without an API server; None: unknown."""
    group, _, _version = api_version.rpartition("/")
    for info in all_kinds():
        if (info.group, info.kind) == (group, kind):
            return info.namespaced
    if kind in CLUSTER_SCOPED_KINDS:
        return False
    return True if kind in NAMESPACED_KINDS else None


def object_namespace(namespace: str | None, namespaced: bool | None) -> str | None:
    """The namespace of the object a feed giving `namespace` names, for a kind of that scope."""
    if namespaced is False:
        return None
    return namespace or (DEFAULT_NAMESPACE if namespaced else None)


def feed_selector(feed: Feed) -> Selector:
    """What `feed` selects; a Manifest, override or status matches when it has this selector."""
    scope = kind_is_namespaced(feed.api_version, feed.kind)
    return Selector(feed.api_version, feed.kind, object_namespace(feed.namespace, scope), feed.name)


@lru_cache(maxsize=4096)
def object_selectors(api_version: str, kind: str, namespace: str | None, name: str) -> frozenset[Selector]:
    """Every feed selector that names this object: its own and, where Clusternet's selector
    would match it without a namespace (scope unknown), the namespace-less one. Cached: the
    status of a Subscription asks it for every feed of every cluster, of the same few objects."""
    scope = kind_is_namespaced(api_version, kind)
    exact = Selector(api_version, kind, object_namespace(namespace, scope), name)
    if scope is None and exact.namespace is not None:
        return frozenset((exact, replace(exact, namespace=None)))
    return frozenset((exact,))


def manifest_selectors(manifest: Manifest) -> frozenset[Selector]:
    """The feed selectors that find this Manifest, read from its `config.*` labels as Clusternet does."""
    labels = manifest.metadata.labels or {}
    if not all(key in labels for key in _IDENTITY_LABELS):
        return frozenset()
    group, version = labels[known.CONFIG_GROUP], labels[known.CONFIG_VERSION]
    api_version = f"{group}/{version}" if group else version
    namespace = labels.get(known.CONFIG_NAMESPACE)
    return object_selectors(api_version, labels[known.CONFIG_KIND], namespace, labels[known.CONFIG_NAME])


def names_object(feed: Feed, obj: Feed) -> bool:
    """Whether `feed` names the object `obj` identifies (e.g. a ManifestStatus an agent reported)."""
    return feed_selector(feed) in object_selectors(obj.api_version, obj.kind, obj.namespace, obj.name)


def is_chart_feed(feed: Feed) -> bool:
    """A HelmChart feed names the chart object itself, not a Manifest holding one."""
    return feed.kind == HelmChart.KIND and feed.api_version == HelmChart.api_version_string()


def chart_feed(namespace: str, name: str) -> Feed:
    """The feed naming one HelmChart."""
    return Feed(api_version=HelmChart.api_version_string(), kind=HelmChart.KIND, namespace=namespace, name=name)


def feed_key(feed: Feed) -> str:
    """The key of a feed in a binding's `replicas` (Clusternet's GetFeedKey): apiVersion/Kind[/namespace]/name.

    Built from the feed as written, as Clusternet's is, so `status.replicas` reads the same.
    """
    if feed.namespace:
        return f"{feed.api_version}/{feed.kind}/{feed.namespace}/{feed.name}"
    return f"{feed.api_version}/{feed.kind}/{feed.name}"


def format_feed(feed: Feed) -> str:
    """A feed for humans, in Events and errors (Clusternet's FormatFeed): `Kind [namespace/]name`."""
    return f"{feed.kind} {feed.namespace}/{feed.name}" if feed.namespace else f"{feed.kind} {feed.name}"

"""Clusternet's feed rules in domain/finalizers.py, for both kinds of feed: which Subscriptions
use a feed (strictly, by spec.feeds, not counting those being deleted), taking a feed out of a
Subscription, the in-use message in Clusternet's words, and finalizers added or kept."""

from datetime import UTC, datetime

from clusternet_nats.api.apps import HelmChart, Manifest, Subscription
from clusternet_nats.api.loader import parse_object
from clusternet_nats.domain.finalizers import (
    APP_FINALIZER,
    FEED_PROTECTION_FINALIZER,
    added_while_deleting,
    adding,
    feed_finalizers,
    in_use_message,
    subscriptions_using,
    without,
    without_feed,
)

CHART = HelmChart.model_validate(
    {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "HelmChart",
        "metadata": {"name": "mysql", "namespace": "default"},
        "spec": {"repo": "https://charts.bitnami.com/bitnami", "chart": "mysql", "targetNamespace": "db"},
    }
)
CHART_FEED = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart", "name": "mysql", "namespace": "default"}
CM_FEED = {"apiVersion": "v1", "kind": "ConfigMap", "name": "conf", "namespace": "shop"}


def sub(name: str, *feeds: dict[str, str], deleting: bool = False) -> Subscription:
    obj = Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"subscribers": [{"clusterAffinity": {}}], "feeds": list(feeds)},
        }
    )
    if deleting:
        obj.metadata.deletion_timestamp = datetime.now(UTC)
    return obj


def config_map_manifest() -> Manifest:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf", "namespace": "shop"}}
    manifest = parse_object(config_map)
    assert isinstance(manifest, Manifest)
    return manifest


def test_subscriptions_using_a_feed_strictly_and_not_those_being_deleted() -> None:
    subs = [sub("b", CHART_FEED), sub("a", CM_FEED, CHART_FEED), sub("c", CM_FEED), sub("d", CHART_FEED, deleting=True)]
    assert [s.name for s in subscriptions_using(CHART, subs)] == ["a", "b"]
    assert [s.name for s in subscriptions_using(config_map_manifest(), subs)] == ["a", "c"]
    assert [f.name for f in without_feed(subs[1], CHART).spec.feeds] == ["conf"]
    assert [f.name for f in without_feed(subs[1], config_map_manifest()).spec.feeds] == ["mysql"]


def test_in_use_message_in_clusternets_words() -> None:
    users = [sub("a", CHART_FEED), sub("b", CHART_FEED)]
    assert in_use_message(CHART, users) == (
        "block deleting current HelmChart until all Subscriptions (including apps/a, apps/b) "
        "that refer this as a feed get deleted"
    )
    assert in_use_message(config_map_manifest(), users[:1]).startswith("block deleting current ConfigMap until")


def test_finalizers_added_once_and_never_while_deleting() -> None:
    assert feed_finalizers(False) == (APP_FINALIZER,)
    assert feed_finalizers(True) == (APP_FINALIZER, FEED_PROTECTION_FINALIZER)
    marked = adding(CHART, *feed_finalizers(True))
    assert marked is not None and marked.metadata.finalizers == [APP_FINALIZER, FEED_PROTECTION_FINALIZER]
    assert adding(marked, APP_FINALIZER) is None
    assert without(marked, APP_FINALIZER, FEED_PROTECTION_FINALIZER).metadata.finalizers is None
    deleting = marked.model_copy(deep=True)
    deleting.metadata.deletion_timestamp = datetime.now(UTC)
    assert adding(without(deleting, APP_FINALIZER), APP_FINALIZER) is None
    more = adding(marked, "x/y")
    assert more is not None
    assert added_while_deleting(deleting.metadata, more.metadata) is not None
    assert added_while_deleting(deleting.metadata, without(deleting, APP_FINALIZER).metadata) is None
    assert added_while_deleting(marked.metadata, more.metadata) is None  # not being deleted: allowed

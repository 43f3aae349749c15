"""`cnet get subs` says whether and why not a Subscription is placed; `cnet describe subs` shows
its placement per cluster with the predictor's figures."""

from __future__ import annotations

from datetime import UTC, datetime

from clusternet_nats.api import KindInfo
from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.printer_columns import not_progressing
from clusternet_nats.cli.columns import object_table
from clusternet_nats.cli.describe import describe
from clusternet_nats.cli.resources import Resource

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WEB = "apps/v1/Deployment/shop/web"


def subscription(status: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": "2026-11-30T11:00:00Z"},
        "spec": {"schedulingStrategy": "Dividing", "subscribers": [], "feeds": []},
        "status": status,
    }


PARTIAL = subscription(
    {
        "bindingClusters": ["c-a/a", "c-b/b"],
        "replicas": {WEB: [4, 2]},
        "predictedReplicas": {WEB: [4, None]},
        "unscheduledReplicas": {WEB: 3},
        "drainingClusters": ["c-b/b"],
        "conditions": [
            {
                "type": "Scheduled",
                "status": "False",
                "reason": "PartiallyScheduled",
                "message": "could not place 3 replica(s) of apps/v1/Deployment/shop/web",
                "lastTransitionTime": "2026-11-30T11:00:00Z",
            }
        ],
        "aggregatedStatuses": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": "shop",
                "name": "web",
                "feedStatusDetails": [{"clusterName": "a", "replicaStatus": {"availableReplicas": 3}}],
            }
        ],
    }
)


def test_get_subs_shows_whether_and_why_not_placed() -> None:
    info = Resource.of(KindInfo.of(Subscription))
    table = object_table(info, [PARTIAL, subscription({})], NOW, all_namespaces=False, wide=False, qualified=False)
    assert table.splitlines() == [
        "NAME   SCHEDULED   REASON               AGE",
        "web    False       PartiallyScheduled   60m",
        "web                                     60m",
    ]
    wide = object_table(info, [PARTIAL], NOW, all_namespaces=False, wide=True, qualified=False).splitlines()
    assert wide[0].split() == [
        "NAME", "SCHEDULED", "REASON", "AGE", "MESSAGE", "STRATEGY", "BINDINGS", "UNSCHEDULED", "COMPLETED/DESIRED"
    ]
    assert "could not place 3 replica(s) of apps/v1/Deployment/shop/web   Dividing   2          3" in wide[1]


def test_reason_says_why_a_subscription_is_not_progressing() -> None:
    """Any False condition's reason first (the scheduler waiting for the FeedInventory of feeds that
    are missing, a controller's own), then releases a cluster reports unavailable."""
    waiting = {"type": "Scheduled", "status": "False", "reason": "WaitingForFeedInventory"}
    unparseable = {"type": "FeedsParsed", "status": "False", "reason": "UnParseableFeeds"}
    details = [{"clusterName": "a", "available": True}, {"clusterName": "b", "available": False}]
    failed = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "feedStatusDetails": details}]
    scheduled = {"type": "Scheduled", "status": "True", "reason": "Scheduled"}
    assert not_progressing(subscription({"conditions": [waiting]})) == "WaitingForFeedInventory"
    assert not_progressing(subscription({"conditions": [scheduled, unparseable]})) == "UnParseableFeeds"
    unavailable = subscription({"conditions": [scheduled], "aggregatedStatuses": failed})
    assert not_progressing(unavailable) == "FeedsNotAvailable"
    assert not_progressing(subscription({"conditions": [scheduled]})) == ""
    assert not_progressing(PARTIAL) == "PartiallyScheduled"


def test_describe_subs_shows_replicas_predictions_and_availability_per_cluster() -> None:
    text = describe(PARTIAL, [], NOW)
    placement = text[text.index("Placement:") : text.index("Events:")].splitlines()
    assert placement == [
        "Placement:",
        "  Cluster            Feed                          Replicas   Predicted   Available",
        "  -------            ----                          --------   ---------   ---------",
        f"  c-a/a              {WEB}   4          4           3",
        f"  c-b/b (draining)   {WEB}   2          <unknown>   <none>",
        f"  Unscheduled: 3 of {WEB}",
    ]
    assert "Placement:" not in describe(subscription({}), [], NOW), "nothing scheduled: no section"

"""A deleted feed taken out of the parent's Subscriptions, against a real parent apiserver.

The bridge's copy of a Subscription may be older than the parent's (a status it wrote a moment
ago, a label a user added): the patch, carrying the resourceVersion of that copy, then meets a
conflict. It must read the Subscription afresh and try again there and then, since a retry
left for later may find the feed already gone from NATS and nothing left to say it was in use.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from clusternet_nats.api import Manifest, Subscription, by_kind, parse_object
from clusternet_nats.api.paths import collection_path
from clusternet_nats.bridge.objects import key_of
from clusternet_nats.bridge.specs import remove_feed
from clusternet_nats.kube.reflector import Reflector
from clusternet_nats.kube.rest import connect

from tests.bridge.conftest import Parent


async def test_a_feed_leaves_a_subscription_the_bridge_holds_an_old_copy_of(parent: Parent) -> None:
    ns = f"fr-{uuid.uuid4().hex[:8]}"
    await parent.kubectl("create", "namespace", ns)
    await parent.apply(
        "apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\n"
        f"metadata: {{name: app, namespace: {ns}}}\n"
        "spec:\n  subscribers: [{clusterAffinity: {matchLabels: {a: b}}}]\n"
        f"  feeds: [{{apiVersion: v1, kind: ConfigMap, name: keep, namespace: {ns}}},"
        f" {{apiVersion: v1, kind: ConfigMap, name: drop, namespace: {ns}}}]\n"
    )
    api = await connect(parent.plane.kubeconfig)
    subscriptions = Reflector(api, collection_path(by_kind(Subscription.KIND), ns), key_of)
    watching = asyncio.create_task(subscriptions.run())
    try:
        await asyncio.wait_for(subscriptions.wait_synced(), 30)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    old = subscriptions.get(f"{ns}.app")
    assert old is not None
    await parent.kubectl("label", "subs", "app", "-n", ns, "touched=yes")  # the copy is now old

    feed = parse_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "drop", "namespace": ns}})
    assert isinstance(feed, Manifest)
    try:
        await remove_feed(api, subscriptions, feed)
    finally:
        await api.close()

    sub = await parent.get("subs", "app", "-n", ns)
    assert sub is not None
    assert [f["name"] for f in sub["spec"]["feeds"]] == ["keep"]
    assert sub["metadata"]["labels"] == {"touched": "yes"}  # the user's write made meanwhile is kept
    assert sub["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]

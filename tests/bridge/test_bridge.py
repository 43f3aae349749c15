"""The bridge between a real parent kube-apiserver and a real nats-server.

kubectl writes Subscriptions and their feeds on the parent; the bridge publishes them to NATS,
writes status back on the status subresource, mirrors Descriptions and ManagedClusters onto the
parent, deletes through its finalizer, and publishes nothing twice (no ping-pong).
"""

from __future__ import annotations

import base64
from typing import Any

import nats
from clusternet_nats.api import Description, ManagedCluster, Manifest, Subscription, by_kind
from clusternet_nats.api.apps import SubscriptionStatus
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.bridge.objects import BRIDGED, FINALIZER
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.store import BINDINGS_BUCKET, ObjectStore, StatusStore, object_key
from clusternet_nats.testing.clusters import report_cluster_status
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from tests.bridge.conftest import Parent

CLUSTER_ID = "dc91021d-2361-4f6d-a404-7c33b9e01118"
WIDGET_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.{group}}}
spec:
  group: {group}
  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"""


def subscription(namespace: str, *feeds: str) -> str:
    return f"""apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {{name: app, namespace: {namespace}}}
spec:
  subscribers: [{{clusterAffinity: {{matchLabels: {{env: test}}}}}}]
  feeds: [{", ".join(feeds)}]
"""


def store(js: JetStreamContext, kind: str) -> ObjectStore[Any]:
    return ObjectStore(js, by_kind(kind))


async def test_subscription_round_trip_without_ping_pong(
    parent: Parent, bridge: None, js: JetStreamContext, nats_server: NatsServer, unique_ns: str
) -> None:
    subs = store(js, Subscription.KIND)
    key = object_key(unique_ns, "app")
    # Every publish to the Subscription's key, as NATS sees it.
    watcher = await nats.connect(nats_server.url)
    published: list[Msg] = []

    async def record(msg: Msg) -> None:
        published.append(msg)

    await watcher.subscribe(f"$KV.subscriptions.{key}", cb=record)
    try:
        await parent.kubectl("create", "namespace", unique_ns)
        await parent.apply(
            subscription(unique_ns, f"{{apiVersion: v1, kind: ConfigMap, name: c, namespace: {unique_ns}}}")
        )

        on_nats = await eventually(lambda: subs.get(unique_ns, "app"), timeout=20, what="published to NATS")
        on_parent = await parent.get("subs", "app", "-n", unique_ns)
        assert on_parent is not None
        assert on_nats.metadata.uid == on_parent["metadata"]["uid"]
        assert FINALIZER in on_parent["metadata"]["finalizers"]
        assert not on_nats.metadata.finalizers and not on_nats.metadata.managed_fields

        # The controllers report on NATS; the parent's status subresource shows the merged view.
        binding = SubscriptionBinding(
            subscription_uid=on_nats.metadata.uid, spec_hash=1, binding_clusters=["clusternet-abcde/child"]
        )
        await StatusStore(js, BINDINGS_BUCKET, SubscriptionBinding).put(key, binding, 0)
        status = SubscriptionStatus(desired_releases=1, completed_releases=1)
        await StatusStore(js, "subscriptions-status", SubscriptionStatus).put(key, status, 0)

        async def shown() -> dict[str, Any] | None:
            found = await parent.get("subs", "app", "-n", unique_ns)
            status = (found or {}).get("status") or {}
            return found if status.get("bindingClusters") and status.get("completedReleases") == 1 else None

        await eventually(shown, timeout=20, what="status on the parent")

        # A later user change arrives; the status writes in between published nothing.
        await parent.kubectl("label", "subs", "app", "-n", unique_ns, "tier=web")
        await eventually(lambda: _labelled(subs, unique_ns), timeout=20, what="label published")
        await barrier(watcher)
        assert len(published) == 2, [m.data for m in published]  # created, then labelled

        # Deleting on the parent deletes on NATS first, then lets the parent object go.
        await parent.kubectl("delete", "subs", "app", "-n", unique_ns, "--timeout=30s")
        assert await subs.get(unique_ns, "app") is None
        assert await parent.get("subs", "app", "-n", unique_ns) is None
    finally:
        await watcher.close()


async def _labelled(subs: ObjectStore[Any], namespace: str) -> bool:
    found = await subs.get(namespace, "app")
    return found is not None and found.labels.get("tier") == "web"


async def test_feeds_become_manifests(parent: Parent, bridge: None, js: JetStreamContext, unique_ns: str) -> None:
    manifests = store(js, Manifest.KIND)
    await parent.kubectl("create", "namespace", unique_ns)
    await parent.kubectl("create", "configmap", "conf", "-n", unique_ns, "--from-literal=k=v1")
    group = f"{unique_ns}.example.org"  # a CRD of its own, so tests never share one
    await parent.apply(WIDGET_CRD.format(group=group))
    await parent.kubectl("wait", "--for", "condition=established", f"crd/widgets.{group}")
    await parent.apply(f"apiVersion: {group}/v1\nkind: Widget\nmetadata: {{name: w1, namespace: {unique_ns}}}\n")
    await parent.apply(
        subscription(
            unique_ns,
            f"{{apiVersion: v1, kind: ConfigMap, name: conf, namespace: {unique_ns}}}",
            f"{{apiVersion: v1, kind: Namespace, name: {unique_ns}}}",
            f"{{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: widgets.{group}}}",
            f"{{apiVersion: {group}/v1, kind: Widget, name: w1, namespace: {unique_ns}}}",
        )
    )

    async def manifest(name: str, want: str | None = None) -> Any:
        found = await manifests.get("clusternet-reserved", name)
        if found is None or (want is not None and found.template.get("data", {}).get("k") != want):
            return None
        return found

    conf = await eventually(lambda: manifest(f"configmaps.{unique_ns}.conf", "v1"), timeout=20, what="manifest")
    assert conf.metadata.annotations[BRIDGED] == "true"
    assert set(conf.template["metadata"]) == {"name", "namespace"}  # nothing the parent's apiserver set
    assert await eventually(lambda: manifest(f"namespaces.{unique_ns}"), timeout=20, what="namespace manifest")
    crd = await eventually(lambda: manifest(f"customresourcedefinitions.widgets.{group}"), timeout=20, what="crd")
    assert crd.template["spec"]["group"] == group and "status" not in crd.template
    widget = await eventually(lambda: manifest(f"widgets.{unique_ns}.w1"), timeout=20, what="custom resource")
    assert widget.template["kind"] == "Widget"

    await parent.kubectl("patch", "configmap", "conf", "-n", unique_ns, "-p", '{"data":{"k":"v2"}}')
    await eventually(lambda: manifest(f"configmaps.{unique_ns}.conf", "v2"), timeout=20, what="updated manifest")

    await parent.kubectl("delete", "configmap", "conf", "-n", unique_ns)
    await eventually(
        lambda: _absent(manifests, f"configmaps.{unique_ns}.conf"), timeout=20, what="manifest of deleted feed"
    )
    await parent.kubectl("delete", "subs", "app", "-n", unique_ns, "--timeout=30s")


async def test_what_the_parent_allocated_to_a_feed_stays_there(
    parent: Parent, bridge: None, js: JetStreamContext, unique_ns: str
) -> None:
    """A Service's cluster IP and node ports, a Job's controller-uid selector and labels: the
    parent's apiserver allocated them, a child would refuse them (an address outside its range, a
    selector it did not generate). The Manifests carry the feeds trimmed as Clusternet's shadow
    API trims them."""
    manifests = store(js, Manifest.KIND)
    await parent.kubectl("create", "namespace", unique_ns)
    await parent.kubectl("create", "service", "nodeport", "web", "-n", unique_ns, "--tcp=80:8080")
    await parent.kubectl("create", "job", "once", "-n", unique_ns, "--image=busybox")
    live_service = await parent.get("service", "web", "-n", unique_ns)
    live_job = await parent.get("job", "once", "-n", unique_ns)
    assert live_service is not None and live_job is not None
    assert live_service["spec"]["clusterIP"] and live_service["spec"]["ports"][0]["nodePort"]
    assert "batch.kubernetes.io/controller-uid" in live_job["spec"]["selector"]["matchLabels"]
    await parent.apply(
        subscription(
            unique_ns,
            f"{{apiVersion: v1, kind: Service, name: web, namespace: {unique_ns}}}",
            f"{{apiVersion: batch/v1, kind: Job, name: once, namespace: {unique_ns}}}",
        )
    )

    async def manifest(name: str) -> Any:
        return await manifests.get("clusternet-reserved", name)

    service = await eventually(lambda: manifest(f"services.{unique_ns}.web"), timeout=20, what="service manifest")
    spec = service.template["spec"]
    assert spec["type"] == "NodePort" and not {"clusterIP", "clusterIPs"} & set(spec)
    assert [port.get("nodePort") for port in spec["ports"]] == [None]
    assert [port["targetPort"] for port in spec["ports"]] == [8080]  # what the user asked for stays
    job = await eventually(lambda: manifest(f"jobs.{unique_ns}.once"), timeout=20, what="job manifest")
    allocated = {"controller-uid", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"}
    assert not allocated & set(job.template["spec"]["selector"].get("matchLabels") or {})
    assert not allocated & set(job.template["spec"]["template"]["metadata"].get("labels") or {})
    assert job.template["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    await parent.kubectl("delete", "subs", "app", "-n", unique_ns, "--timeout=30s")


async def _absent(manifests: ObjectStore[Any], name: str) -> bool:
    return await manifests.get("clusternet-reserved", name) is None


async def test_descriptions_and_clusters_mirrored_onto_parent(
    parent: Parent, bridge: None, js: JetStreamContext, unique_ns: str
) -> None:
    cluster = ManagedCluster.model_validate(
        {
            "apiVersion": "clusters.clusternet.io/v1beta1",
            "kind": "ManagedCluster",
            "metadata": {"name": "child", "namespace": unique_ns},
            "spec": {"clusterId": CLUSTER_ID, "syncMode": "Pull"},
        }
    )
    await store(js, ManagedCluster.KIND).create(cluster)
    status = ManagedClusterStatus(k8s_version="v1.34.4", agent_version="v0.1")
    await report_cluster_status(js, unique_ns, "child", status)
    raw = base64.b64encode(b'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"qux"}}').decode()
    description = Description.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Description",
            "metadata": {"name": "app-generic", "namespace": unique_ns},
            "spec": {"deployer": "Generic", "raw": [raw]},
        }
    )
    await store(js, Description.KIND).create(description)

    async def columns() -> list[str] | None:
        result = await parent.plane.kubectl_async("get", "mcls", "-n", unique_ns)
        lines = result.stdout.splitlines()
        return lines[1].split() if len(lines) == 2 and "v1.34.4" in lines[1] else None

    row = await eventually(columns, timeout=20, what="ManagedCluster with status on the parent")
    assert row[:4] == ["child", CLUSTER_ID, "Pull", "v1.34.4"]
    mirrored = await eventually(lambda: parent.get("desc", "app-generic", "-n", unique_ns), timeout=20, what="desc")
    assert mirrored["spec"]["raw"] == [raw]

    await store(js, Description.KIND).delete(unique_ns, "app-generic")
    await eventually(
        lambda: _gone(parent, "desc", "app-generic", unique_ns), timeout=20, what="mirror deleted with the original"
    )


async def _gone(parent: Parent, kind: str, name: str, namespace: str) -> bool:
    return await parent.get(kind, name, "-n", namespace) is None


async def test_object_the_model_rejects_gets_a_warning_event(
    parent: Parent, bridge: None, js: JetStreamContext, unique_ns: str
) -> None:
    await parent.kubectl("create", "namespace", unique_ns)
    # The CRD schema cannot say "In needs values"; the model can.
    await parent.apply(
        f"""apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {{name: picky, namespace: {unique_ns}}}
spec:
  subscribers: [{{clusterAffinity: {{matchExpressions: [{{key: env, operator: In}}]}}}}]
  feeds: [{{apiVersion: v1, kind: Namespace, name: {unique_ns}}}]
"""
    )

    async def warning() -> str | None:
        out = await parent.kubectl("get", "events", "-n", unique_ns, "--field-selector", "reason=InvalidObject")
        return out if "picky" in out or "values" in out else None

    out = await eventually(warning, timeout=20, what="Warning Event on the parent")
    assert "matchExpressions" in out and "values" in out
    assert await store(js, Subscription.KIND).get(unique_ns, "picky") is None
    await parent.kubectl("delete", "subs", "picky", "-n", unique_ns, "--timeout=30s")

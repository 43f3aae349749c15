"""Issue 4's end to end, with kubectl as the only client: a Subscription and its feeds (a
Namespace, a Deployment, a Service, a ConfigMap, a CRD and one of its custom resources) applied
to the parent apiserver reach both child apiservers; the parent's Subscription shows the
aggregated status; deleting it there removes everything from both children.

Real parts throughout: three kube-apiservers, one nats-server, and the bridge, scheduler,
deployer and two kube-backend agents (in this process, each with its own NATS connection).
"""

from __future__ import annotations

import contextlib
import functools
import uuid

from clusternet_nats.agent.service import Agent, AgentOptions, Backend
from clusternet_nats.bridge.service import builder
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.scheduler.service import build as build_scheduler
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually

from tests.bridge.conftest import Parent


def feeds_and_subscription(ns: str, group: str, suffix: str) -> str:
    return f"""apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: web, image: nginx:1.27}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {ns}}}
spec: {{selector: {{app: web}}, ports: [{{port: 80}}]}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: {ns}}}
data: {{mode: blue}}
---
apiVersion: apiextensions.k8s.io/v1
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
---
apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {{name: app, namespace: {ns}}}
spec:
  subscribers: [{{clusterAffinity: {{matchLabels: {{e2e: "{suffix}"}}}}}}]
  feeds:
    - {{apiVersion: v1, kind: Namespace, name: {ns}}}
    - {{apiVersion: apps/v1, kind: Deployment, name: web, namespace: {ns}}}
    - {{apiVersion: v1, kind: Service, name: web, namespace: {ns}}}
    - {{apiVersion: v1, kind: ConfigMap, name: settings, namespace: {ns}}}
    - {{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: widgets.{group}}}
    - {{apiVersion: {group}/v1, kind: Widget, name: w1, namespace: {ns}}}
"""


async def _present(plane: ControlPlane, *args: str) -> bool:
    return (await plane.kubectl_async("get", *args)).returncode == 0


async def _gone_or_terminating(plane: ControlPlane, *args: str) -> bool:
    result = await plane.kubectl_async("get", *args, "-o", "jsonpath={.metadata.deletionTimestamp}")
    return result.returncode != 0 or bool(result.stdout.strip())


async def test_kubectl_on_the_parent_reaches_both_children(
    parent: Parent, kube_children: list[ControlPlane], nats_server: NatsServer
) -> None:
    suffix = uuid.uuid4().hex[:8]
    ns, group = f"shop-{suffix}", f"k{suffix}.example.com"
    agents = [
        Agent(
            AgentOptions(
                cluster_name=f"{plane.name}-{suffix}",
                cluster_labels={"e2e": suffix},
                backend=Backend.KUBE,
                kubeconfig=plane.kubeconfig,
            )
        )
        for plane in kube_children
    ]
    async with contextlib.AsyncExitStack() as stack:
        for name, build in [
            ("bridge", builder(parent.plane.kubeconfig)),
            ("scheduler", build_scheduler),
            ("deployer", build_deployer),
            *[(f"agent-{i}", agent.build) for i, agent in enumerate(agents)],
        ]:
            await stack.enter_async_context(running_service(name, build, nats_server.url))

        await parent.apply(feeds_and_subscription(ns, group, suffix))
        await parent.kubectl("wait", "--for", "condition=established", f"crd/widgets.{group}")
        await parent.apply(f"apiVersion: {group}/v1\nkind: Widget\nmetadata: {{name: w1, namespace: {ns}}}\n")

        for plane in kube_children:
            for what in (
                ("deployment", "-n", ns, "web"),
                ("service", "-n", ns, "web"),
                ("configmap", "-n", ns, "settings"),
                (f"widgets.{group}", "-n", ns, "w1"),
            ):
                await eventually(functools.partial(_present, plane, *what), 90, what=f"{what} in {plane.name}")

        async def aggregated() -> dict[str, object] | None:
            sub = await parent.get("subs", "app", "-n", ns)
            status = (sub or {}).get("status") or {}
            complete = len(status.get("bindingClusters") or []) == 2 and status.get("completedReleases") == 2
            return status if complete and status.get("aggregatedStatuses") else None

        status = await eventually(aggregated, 60, what="aggregated status on the parent's Subscription")
        assert {s["kind"] for s in status["aggregatedStatuses"]} >= {"Deployment", "Service", "ConfigMap"}

        await parent.kubectl("delete", "subs", "app", "-n", ns, "--timeout=60s")
        for plane in kube_children:
            gone = functools.partial(_gone_or_terminating, plane)
            await eventually(functools.partial(gone, "namespace", ns), 60, what=f"{ns} gone from {plane.name}")
            await eventually(functools.partial(gone, "crd", f"widgets.{group}"), 60, what="CRD gone")

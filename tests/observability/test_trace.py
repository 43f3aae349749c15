"""One `cnet apply` is one trace: the hub's request, the scheduler's decision, the deployer's
render and every agent's apply, carried over a real nats-server in KV headers.

The hub, scheduler, deployer and an agent hosting three simulated clusters (two of them `env=prod`)
run in this process, their spans going to the SDK's in-memory exporter; `cnet apply` of
examples/replication runs as a user would run it. The command's span is the root of one trace that
holds the hub's PUT of the Subscription, a reconcile of the scheduler, one of the deployer and,
for each prod cluster, the agent's `agent.apply` of that cluster's Description, each reached
through the spans before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path

from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.api.apps import Description, DescriptionPhase, DescriptionStatus
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterStatus
from clusternet_nats.api.registry import by_kind
from clusternet_nats.cli.main import app
from clusternet_nats.deployer.service import build as build_deployer
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.scheduler.service import build as build_scheduler
from clusternet_nats.store import ObjectStore, StatusStore
from clusternet_nats.store.tracecontext import SERVICE_ATTRIBUTE
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "replication"


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[ReadableSpan]:
    """The span's parents up to the root, as far as they were recorded."""
    chain = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        chain.append(span)
    return chain


def _attribute(span: ReadableSpan, name: str) -> str:
    return str((span.attributes or {}).get(name))


def _service(span: ReadableSpan) -> str:
    return _attribute(span, SERVICE_ATTRIBUTE)


def _clusters(applies: list[ReadableSpan], namespaces: list[str]) -> set[str]:
    """The clusters' namespaces whose Description (`<namespace>.<name>`) these applies applied."""
    return {ns for s in applies for ns in namespaces if _attribute(s, "cnet.description").startswith(ns + ".")}


async def test_one_trace_spans_hub_scheduler_deployer_and_every_agent(
    private_nats: NatsServer, private_js: JetStreamContext, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    agent = Agent(
        AgentOptions(
            cluster_name=f"t{uuid.uuid4().hex[:6]}",
            sim_clusters=3,
            sim_labels_cycle=[{"env": "prod"}, {"env": "prod"}, {"env": "staging"}],
        )
    )
    prod = [c.identity.namespace for c in agent.clusters[:2]]
    statuses = StatusStore(private_js, "descriptions-status", DescriptionStatus)
    descriptions: ObjectStore[Description] = ObjectStore(private_js, by_kind("Description"))

    async def deployed_to_prod() -> bool:
        found = [d for ns in prod for d in await descriptions.list(ns)]
        if len(found) < len(prod):
            return False
        states = [await statuses.get(descriptions.key_of(d)) for d in found]
        return all(s is not None and s.value.phase is DescriptionPhase.SUCCESS for s in states)

    async with contextlib.AsyncExitStack() as stack:
        hub = await stack.enter_async_context(running_hub(private_nats.url))
        await stack.enter_async_context(running_service("clusternet-scheduler", build_scheduler, private_nats.url))
        await stack.enter_async_context(running_service("clusternet-deployer", build_deployer, private_nats.url))
        await stack.enter_async_context(running_service("clusternet-agent", agent.build, private_nats.url))
        # The clusters are up before the apply, so the scheduler binds on the Subscription's write (in
        # its trace), not later on a cluster's first status (in the agent's).
        clusters: ObjectStore[ManagedCluster] = ObjectStore(private_js, by_kind("ManagedCluster"))
        cluster_statuses = StatusStore(private_js, "managedclusters-status", ManagedClusterStatus)
        for cluster in agent.clusters:
            key = clusters.key(cluster.identity.namespace, cluster.identity.name)
            await eventually(lambda k=key: cluster_statuses.get(k), 30, what=f"{key}'s status")
        args = [*hub.cnet_args(), "apply", "-f", str(EXAMPLE)]
        result = await asyncio.to_thread(lambda: CliRunner().invoke(app, args))
        assert result.exit_code == 0, result.output
        await eventually(deployed_to_prod, 30, what="the replication example deployed to both prod clusters")

        def apply_spans() -> list[ReadableSpan]:
            """Applies whose chain of parents reaches the command's span (the spans around an apply
            end after it); other applies (a later re-render's) are other traces."""
            finished = spans.get_finished_spans()
            by_id = {s.context.span_id: s for s in finished}
            done = [s for s in finished if s.name == "agent.apply" and _ancestors(s, by_id)[-1:]]
            rooted = [s for s in done if _ancestors(s, by_id)[-1].name.endswith(" apply")]
            return rooted if _clusters(rooted, prod) == set(prod) else []

        rooted = await eventually(apply_spans, 10, what="an agent.apply span for each prod cluster")

    finished = spans.get_finished_spans()
    subscription_path = "/apis/apps.clusternet.io/v1alpha1/namespaces/default/subscriptions/app-demo"
    requests = [s for s in finished if s.name.startswith("PUT ") and _attribute(s, "url.path") == subscription_path]
    assert requests, sorted({s.name for s in finished})
    trace_id = requests[-1].context.trace_id
    assert _service(requests[-1]) == "clusternet-hub"
    in_trace = [s for s in finished if s.context.trace_id == trace_id]
    by_id = {s.context.span_id: s for s in in_trace}
    services = {_service(s) for s in in_trace if s.name == "reconcile"}
    assert {"clusternet-scheduler", "clusternet-deployer", "clusternet-agent"} <= services, services

    applies = [s for s in rooted if s.context.trace_id == trace_id]
    assert _clusters(applies, prod) == set(prod), "each prod cluster's apply is in the Subscription's trace"
    for apply in applies:
        chain = [(_service(s), s.name) for s in _ancestors(apply, by_id)]
        assert chain[-1][1].endswith(" apply"), f"the root is cnet's command span: {chain}"
        assert ("clusternet-hub", requests[-1].name) in chain, chain
        path = [service for service, _ in chain]
        for service in ("clusternet-agent", "clusternet-deployer", "clusternet-hub"):
            assert service in path, chain
        assert path.index("clusternet-deployer") < path.index("clusternet-hub")
        assert any(name == "store.write" for _, name in chain), "the change reached the agent as a KV write"

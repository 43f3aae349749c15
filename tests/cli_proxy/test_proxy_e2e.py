"""The real kubectl through the hub's proxy to simulated clusters, as `cnet proxy` and a
`cnet kubeconfig` file run it: reads across namespaces, a write in the child, and a watch that
sees a change made directly in the child."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster
from clusternet_nats.agent.backends.sim.apiserver import SimApiServer
from clusternet_nats.agent.service import Agent, AgentOptions
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tools import Tools, run_tool
from clusternet_nats.testing.waiting import eventually

OWNER = "clusternet-e2e.app"
WEB = ObjectRef("apps/v1", "Deployment", "shop", "web")


def deployment(replicas: int) -> dict[str, object]:
    template = {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    meta = {"name": "web", "namespace": "shop"}
    spec = {"replicas": replicas, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


@pytest.fixture(scope="module")
async def fleet(nats_server: NatsServer) -> AsyncIterator[tuple[ServedHub, list[SimCluster]]]:
    """The hub and one agent process's two simulated clusters, each holding namespace shop and a
    Deployment web, applied as the agent applies a Description."""
    agent = Agent(AgentOptions(cluster_name=f"px{uuid.uuid4().hex[:6]}", sim_clusters=2))
    async with running_hub(nats_server.url) as hub, running_service("agent", agent.build, nats_server.url):
        await eventually(lambda: agent.clusters and all(c.ready for c in agent.clusters), what="clusters started")
        sims = [c.backend for c in agent.clusters]
        assert all(isinstance(s, SimCluster) for s in sims)
        clusters = [s for s in sims if isinstance(s, SimCluster)]
        for sim in clusters:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
            outcome = await sim.apply(OWNER, [namespace, deployment(2)])
            assert not outcome.failures
        yield hub, clusters


async def cnet(hub: ServedHub, kube_tools: Tools, *args: str) -> tuple[int, str, str]:
    """`cnet` as its own process (kubectl inherits its stdout), as the hub's admin."""
    env = {**os.environ, "CNET_KUBECTL": str(kube_tools.kubectl)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "clusternet_nats.cli.main", *hub.cnet_args(), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_kubectl_reads_every_namespace_of_a_child_through_the_hub(
    fleet: tuple[ServedHub, list[SimCluster]], kube_tools: Tools
) -> None:
    hub, clusters = fleet
    first = clusters[0].name
    code, out, err = await eventually_ok(hub, kube_tools, first, "get", "ns,deploy", "-A")
    assert code == 0, err
    assert "namespace/shop" in out and "namespace/kube-system" in out
    assert "deployment.apps/web" in out and "shop" in out
    code, out, err = await cnet(hub, kube_tools, "proxy", first, "--", "get", "deploy/web", "-n", "shop", "-o", "json")
    assert code == 0, err
    web = json.loads(out)
    assert web["status"]["readyReplicas"] == 2 and web["metadata"]["resourceVersion"]
    code, _, err = await cnet(hub, kube_tools, "proxy", first, "--", "get", "deploy", "nope", "-n", "shop")
    assert code == 1 and 'deployments.apps "nope" not found' in err


async def eventually_ok(hub: ServedHub, kube_tools: Tools, cluster: str, *args: str) -> tuple[int, str, str]:
    """`cnet proxy CLUSTER -- ARGS` once the cluster's agent has registered its cluster id."""

    async def attempt() -> tuple[int, str, str] | None:
        result = await cnet(hub, kube_tools, "proxy", cluster, "--", *args)
        unknown = "has no spec.clusterId" in result[2] or "not found (no cluster" in result[2]
        return None if unknown else result

    return await eventually(attempt, timeout=60, what=f"cluster {cluster} reachable through the proxy")


async def test_a_write_through_the_proxy_lands_in_the_child_and_a_watch_sees_a_direct_change(
    fleet: tuple[ServedHub, list[SimCluster]], kube_tools: Tools, tmp_path: Path
) -> None:
    hub, clusters = fleet
    second = clusters[1]
    code, _, err = await eventually_ok(hub, kube_tools, second.name, "get", "ns")
    assert code == 0, err
    kubeconfig = tmp_path / "children"
    code, _, err = await cnet(hub, kube_tools, "kubeconfig", second.name, "-o", str(kubeconfig))
    assert code == 0, err
    meta = {"name": "cfg", "namespace": "shop"}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "1"}}
    kubectl = (kube_tools.kubectl, "--kubeconfig", kubeconfig)
    applied = await run_tool(*kubectl, "apply", "-f", "-", input=json.dumps(config_map))
    assert applied.returncode == 0, applied.stderr
    stored = second.objects.get(ObjectRef("v1", "ConfigMap", "shop", "cfg"))
    assert stored is not None and stored.body["data"] == {"a": "1"}

    watch = await asyncio.create_subprocess_exec(
        str(kube_tools.kubectl), "--kubeconfig", str(kubeconfig), "get", "deploy", "web", "-n", "shop", "-w",
        "-o", "jsonpath={.metadata.name}={.spec.replicas}{\"\\n\"}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert watch.stdout is not None
        first = await asyncio.wait_for(watch.stdout.readline(), 30)
        assert first.decode().strip() == "web=2"
        api = second.apiserver()
        assert isinstance(api, SimApiServer)
        await eventually(lambda: api.watching == 1, what="kubectl's watch open at the simulated cluster")
        changed = await second.apply(OWNER, [deployment(5)])  # directly in the child, not through the hub
        assert not changed.failures
        seen = await asyncio.wait_for(_line_with(watch.stdout, "web=5"), 10)
        assert seen == "web=5"
    finally:
        with contextlib.suppress(ProcessLookupError):
            watch.terminate()
        await watch.wait()


async def _line_with(stream: asyncio.StreamReader, wanted: str) -> str:
    while True:
        line = (await stream.readline()).decode().strip()
        if not line or line == wanted:
            return line

"""Clusternet's replication-scheduling example on real child control planes: the deployer
in-process, two agents with the kube backend installing with the real helm, the chart served by
the test under the example's name and versions.

The example's files are loaded as `cnet apply` reads them (api/loader) and bound to the cluster the
Subscription names (its cluster id, which the example asks its reader to set, is the first child's);
the release is really installed in that child only: `mysql` 9.1.8 (the Localization's
overrideChart) in `abc`, with the Globalization's and the Localization's values merged, nginx with
the Localization's JSON patches, the HelmRelease deployed at revision 1; deleting the
Subscription uninstalls it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.service import Agent, AgentOptions, Backend
from clusternet_nats.api.apps import HelmReleaseStatus, Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.loader import load_path
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.charts import ChartRepo
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tools import Tools, run_tool
from clusternet_nats.testing.waiting import eventually

from tests.deployer.test_deployer import Upstream, deployer, hub
from tests.helm_sim.test_examples_e2e import mysql_repo, replication_example

__all__ = ["deployer", "hub", "mysql_repo"]


async def helm_release(plane: ControlPlane, *args: str) -> Any:
    """`helm <args> mysql -n abc -o json` in the child, None when there is no such release."""
    done = await run_tool(plane.tools.helm, *args, "mysql", "-n", "abc", "-o", "json", "--kubeconfig", plane.kubeconfig)
    if done.returncode != 0:
        assert "not found" in done.stderr, done.stderr
        return None
    return json.loads(done.stdout)


async def nginx_replicas(plane: ControlPlane) -> int | None:
    done = await plane.kubectl_async("get", "deployment", "my-nginx", "-n", "foo", "-o", "json")
    return int(json.loads(done.stdout)["spec"]["replicas"]) if done.returncode == 0 else None


async def test_the_replication_example_installs_its_release_in_the_real_child_it_names(
    nats_server: NatsServer,
    hub: Upstream,
    deployer: None,
    kube_children: list[ControlPlane],
    kube_tools: Tools,
    mysql_repo: ChartRepo,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("PATH", f"{kube_tools.helm.parent}:{os.environ['PATH']}")
    agents = [
        Agent(AgentOptions(cluster_name=f"compat-{i}-{hub.ns}"[:40], backend=Backend.KUBE, kubeconfig=plane.kubeconfig))
        for i, plane in enumerate(kube_children)
    ]
    first_plane, second_plane = kube_children
    async with running_service("agent-1", agents[0].build, nats_server.url), running_service(
        "agent-2", agents[1].build, nats_server.url
    ):
        ident = await eventually(lambda: _ready(agents[0]), 60, what="the first agent's cluster ready")
        await eventually(lambda: _ready(agents[1]), 60, what="the second agent's cluster ready")
        first: ManagedCluster = await eventually(
            lambda: hub.get("ManagedCluster", ident.namespace, ident.name), 30, what="the first ManagedCluster"
        )
        files = replication_example(tmp_path, mysql_repo.url, first.namespace, first.spec.cluster_id)
        for path in files:
            for obj in load_path(path):
                await hub.create(obj)
        sub: Subscription = await hub.get("Subscription", "default", "app-demo")
        await hub.bind(sub, [first])
        try:

            async def installed() -> Any:
                release = await helm_release(first_plane, "get", "metadata")
                return release if release and release["status"] == "deployed" else None

            release = await eventually(installed, 120, what="mysql installed in the first child")
            assert (release["chart"], release["version"], release["revision"]) == ("mysql", "9.1.8", 1)
            assert await helm_release(first_plane, "get", "values") == {
                "commonLabels": {"clusternet.io/override-by": "clusternet-hub", "some-label": "some-value"},
                "primary": {"persistence": {"enabled": False}},
                "image": {"tag": "8.0.26-debian-10-r39"},
                "auth": {"database": f"database_for_{first.namespace}"},
            }
            assert await eventually(lambda: nginx_replicas(first_plane), 60, what="nginx in the first child") == 3
            assert await helm_release(second_plane, "get", "metadata") is None
            assert await nginx_replicas(second_plane) is None

            statuses = StatusStore(hub.js, "helmreleases-status", HelmReleaseStatus)

            async def hr_deployed() -> bool:
                releases = await hub.store("HelmRelease").list(first.namespace)
                found = [await statuses.get(object_key(first.namespace, r.name)) for r in releases]
                return len(found) == 1 and all(f and (f.value.phase, f.value.version) == ("deployed", 1) for f in found)

            await eventually(hr_deployed, 60, what="the HelmRelease deployed, revision 1")
        finally:
            await hub.store("Subscription").delete("default", "app-demo")
            await eventually(
                lambda: _uninstalled(first_plane), 120, what="mysql uninstalled once the Subscription is deleted"
            )
            for path in reversed(files):
                for obj in load_path(path):
                    await hub.store(obj.kind).delete(obj.metadata.namespace, obj.name)


def _ready(agent: Agent) -> Any:
    """The identity of the agent's cluster once it is ready."""
    return agent.clusters[0].identity if agent.clusters and agent.clusters[0].ready else None


async def _uninstalled(plane: ControlPlane) -> bool:
    return await helm_release(plane, "get", "metadata") is None

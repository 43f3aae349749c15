"""A secured hub (auth callout, TLS leaf port) with its HTTP API, and a kube agent whose own leaf
node dials the hub through a link the test can cut: kubectl reaches the child only via the hub."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from clusternet_nats.agent.backends.kube.cluster import KubeCluster
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import ClusterIdentity, single_cluster
from clusternet_nats.agent.registration import Enrollment, RegistrationSettings
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.proxy import PROXY_PREFIX
from clusternet_nats.hub.registration.testing import RegistrationHub, secured_hub
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.tcplink import TcpLink
from clusternet_nats.testing.tools import Tools, run_tool
from clusternet_nats.testing.waiting import eventually

USERS = {"bob": ["dev"], "carol": []}
"""bob may use every cluster's socket (the child's RBAC gives him nothing); carol no socket at all."""
POLICY = {"bindings": [{"role": "view", "users": ["bob"], "clusters": ["*"]}]}


@dataclass
class Proxied:
    registration: RegistrationHub
    hub: ServedHub
    link: TcpLink
    plane: ControlPlane
    identity: ClusterIdentity
    tools: Tools
    workdir: Path

    def kubeconfig(self, user: str) -> Path:
        """A kubeconfig whose server is the hub's proxy path to the child, as `user`."""
        path = self.workdir / f"{user}.kubeconfig"
        server = f"{self.hub.url}{PROXY_PREFIX}{self.identity.cluster_id}/proxy/direct"
        cluster = {"server": server, "certificate-authority": str(self.hub.ca_file)}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "child", "cluster": cluster}],
            "users": [{"name": user, "user": {"token": self.hub.tokens[user]}}],
            "contexts": [{"name": "child", "context": {"cluster": "child", "user": user}}],
            "current-context": "child",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    async def kubectl(self, *args: str, user: str = "admin", input: str | None = None) -> tuple[int, str, str]:
        done = await run_tool(self.tools.kubectl, "--kubeconfig", self.kubeconfig(user), *args, input=input)
        return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
async def proxied(
    kube_children: list[ControlPlane], kube_tools: Tools, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Proxied]:
    workdir = tmp_path_factory.mktemp("proxy")
    plane = kube_children[0]
    async with contextlib.AsyncExitStack() as stack:
        registration = await stack.enter_async_context(secured_hub(workdir / "nats"))
        hub = await stack.enter_async_context(running_hub(registration.secure.url("hub"), USERS, POLICY))
        link = await stack.enter_async_context(TcpLink("127.0.0.1", registration.secure.leaf_port))
        backend = KubeCluster(plane.kubeconfig)
        cluster_id = await backend.wait_cluster_id()
        identity = single_cluster(f"px{uuid.uuid4().hex[:6]}", cluster_id, {}, ClusterSyncMode.PULL)
        settings = RegistrationSettings(
            await registration.token(),
            workdir / "state",
            hub_leaf_url=f"tls://127.0.0.1:{link.port}",
            hub_ca=registration.secure.pki.ca_cert,
        )
        agent = ClusterAgent(identity, backend, 2.0, enrollment=Enrollment(settings, identity))
        stack.push_async_callback(agent.stop)
        await agent.start(CommonOptions(nats_url="nats://127.0.0.1:1", health_port=-1, jetstream_domain="hub"))
        proxied = Proxied(registration, hub, link, plane, identity, kube_tools, workdir)

        async def answers() -> bool:
            code, _, _ = await proxied.kubectl("get", "--raw", "/version")
            return code == 0

        await eventually(answers, timeout=60, what="the child answers through the hub")
        yield proxied

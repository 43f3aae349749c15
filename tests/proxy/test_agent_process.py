"""The proxy as deployed (bench/proxy.py's setup): the hub and a kube agent as their own processes,
the agent on a plain leaf nats-server dialling the hub's. A watch through the hub sees a change made
in the child. An agent given a kubeconfig without `--backend kube` once ran a simulated cluster
under that name, whose watches never saw the real cluster's changes: it is now refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
from clusternet_nats.api.proxy import PROXY_PREFIX
from clusternet_nats.testing.kube import ControlPlane
from clusternet_nats.testing.leaf import hub_and_leaf
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.system import ServiceProcess, ensure_admin_token, wait_ready
from clusternet_nats.testing.waiting import eventually

CLUSTERS = "/apis/clusters.clusternet.io/v1beta1/managedclusters"


def test_a_kubeconfig_without_the_kube_backend_is_refused_naming_both_flags(tmp_path: Path) -> None:
    argv = ["--nats-url", "nats://127.0.0.1:1", "--cluster-name", "child", "--kubeconfig", str(tmp_path / "config")]
    result = subprocess.run(
        [sys.executable, "-m", "clusternet_nats.agent", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "--kubeconfig" in result.stderr and "--backend kube" in result.stderr


@contextlib.contextmanager
def _deployed(workdir: Path, plane: ControlPlane) -> Iterator[tuple[str, str]]:
    """Hub and leaf nats-servers, the hub and the kube agent as processes; yields the hub's URL and token."""
    hub_nats, leaf_nats = hub_and_leaf(workdir)
    services: list[ServiceProcess] = []
    try:
        hub_nats.start()
        leaf_nats.start()
        token = ensure_admin_token(workdir / "tokens.csv")
        hub_port = free_port()
        hub_args = ["--nats-url", hub_nats.url, "--listen", f"127.0.0.1:{hub_port}"]
        hub_args += ["--cert-dir", str(workdir / "hub-certs"), "--token-auth-file", str(workdir / "tokens.csv")]
        agent_args = ["--cluster-name", "child", "--backend", "kube", "--kubeconfig", str(plane.kubeconfig)]
        env = {"CNET_NATS_URL": leaf_nats.url, "CNET_JETSTREAM_DOMAIN": "hub"}
        for name, module, args, service_env in (
            ("hub", "clusternet_nats.hub", hub_args, {}),
            ("agent", "clusternet_nats.agent", agent_args, env),
        ):
            services.append(ServiceProcess(name, module, args, workdir / f"{name}.log", free_port(), service_env))
            services[-1].start()
        wait_ready(services, 120)
        yield f"https://127.0.0.1:{hub_port}", token
    finally:
        for service in services:
            service.stop()
        leaf_nats.stop()
        hub_nats.stop()


async def test_a_watch_through_a_hub_process_to_a_kube_agent_process_sees_the_childs_changes(
    kube_children: list[ControlPlane], tmp_path: Path
) -> None:
    plane = kube_children[1]
    namespace = f"pxp-{uuid.uuid4().hex[:6]}"
    assert (await plane.kubectl_async("create", "namespace", namespace)).returncode == 0
    with _deployed(tmp_path, plane) as (url, token):
        context = ssl.create_default_context(cafile=str(tmp_path / "hub-certs" / "ca.crt"))
        headers = {"Authorization": f"Bearer {token}"}
        timeout = aiohttp.ClientTimeout(total=None, connect=30)
        connector = aiohttp.TCPConnector(ssl=context)
        async with aiohttp.ClientSession(url, headers=headers, connector=connector, timeout=timeout) as hub:

            async def cluster_id() -> str | None:
                async with hub.get(CLUSTERS) as resp:
                    items = (await resp.json()).get("items") or []
                return next((i["spec"].get("clusterId") for i in items if i["metadata"]["name"] == "child"), None)

            path = f"{PROXY_PREFIX}{await eventually(cluster_id, 120, what='the child registered')}/proxy/direct"
            path += f"/api/v1/namespaces/{namespace}/configmaps"
            async with hub.get(path, params={"watch": "1"}) as watch:
                assert watch.status == 200, await watch.text()
                names: list[str] = []

                async def follow() -> None:
                    async for line in watch.content:
                        names.append(json.loads(line)["object"]["metadata"]["name"])

                reader = asyncio.create_task(follow())
                try:
                    done = await plane.kubectl_async("create", "configmap", "made-in-the-child", "-n", namespace)
                    assert done.returncode == 0, done.stderr
                    await eventually(lambda: "made-in-the-child" in names, 20, what="the child's change, watched")
                finally:
                    reader.cancel()

"""deploy/compose's flow as processes, without Docker: init, NATS from the committed config, each
hub-side service started with only the env file init wrote for it (as `set -a; . env` does), and
the agent registering with init's bootstrap token, each simulated cluster through its own leaf
node over TLS, never dialling the client port."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import nats
import pytest
from clusternet_nats.agent.registration import saved_credentials
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime import natsconf
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.system import ServiceProcess
from clusternet_nats.testing.waiting import eventually

from tests.deploy.shipped import shipped_server

pytestmark = pytest.mark.e2e


def _process(name: str, module: str, env: dict[str, str], tmp: Path, *args: str) -> ServiceProcess:
    return ServiceProcess(
        name=name, module=module, args=list(args), log_path=tmp / f"{name}.log", health_port=free_port(), env=env
    )


async def test_compose_services_run_on_their_own_credentials_and_the_agent_registers(tmp_path: Path) -> None:
    async with shipped_server(tmp_path) as shipped, contextlib.AsyncExitStack() as stack:
        hub_env = {**shipped.env("hub"), "CNET_HUB_CERT_DIR": str(tmp_path / "hub-certs")}
        api_port = free_port()
        processes = [
            _process("hub", "clusternet_nats.hub", hub_env, tmp_path, "--listen", f"127.0.0.1:{api_port}"),
            *(
                _process(s, f"clusternet_nats.{s}", shipped.env(s), tmp_path)
                for s in ("scheduler", "deployer", "predictor")
            ),
        ]
        agent = _process(
            "agent",
            "clusternet_nats.agent",
            shipped.env("agent"),
            tmp_path,
            *("--nats-url", "nats://127.0.0.1:1", "--cluster-name", "sim", "--sim-clusters", "2"),
            *("--state-dir", str(tmp_path / "state"), "--cluster-status-update-frequency", "5"),
        )
        for proc in [*processes, agent]:
            stack.callback(proc.stop)
        for proc in processes:
            proc.start()
        try:
            for proc in processes:
                await eventually(lambda p=proc: asyncio.to_thread(p.ready), timeout=60, what=f"{proc.name} /readyz")
            agent.start()
            await eventually(lambda: asyncio.to_thread(agent.ready), timeout=90, what="agent /readyz")
        except TimeoutError as err:
            logs = "\n".join(f"--- {p.name}\n{p.log_tail(15)}" for p in [*processes, agent])
            raise AssertionError(f"{err}\n{logs}") from None

        nc = await nats.connect(shipped.env("hub")["CNET_NATS_URL"])
        try:
            clusters: ObjectStore[ManagedCluster] = ObjectStore(
                nc.jetstream(domain=natsconf.JETSTREAM_DOMAIN), by_kind("ManagedCluster")
            )

            async def registered() -> list[str]:
                return sorted(c.metadata.name or "" for c in await clusters.list())

            assert await eventually(registered, timeout=30, what="both clusters registered") == ["sim-1", "sim-2"]
        finally:
            await nc.close()
        assert sorted(saved_credentials(tmp_path / "state")) == ["sim-1", "sim-2"]

        # The hub's API: HTTPS with the CA it made, and only with the admin token init wrote.
        admin_token = (shipped.out / "hub" / "token-auth.csv").read_text().split(",")[0]
        url = f"https://127.0.0.1:{api_port}/apis/clusters.clusternet.io/v1beta1/managedclusters"
        context = ssl.create_default_context(cafile=str(tmp_path / "hub-certs" / "ca.crt"))
        assert await asyncio.to_thread(_status, url, context, None) == 401
        assert await asyncio.to_thread(_status, url, context, admin_token) == 200


def _status(url: str, context: ssl.SSLContext, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), context=context, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code

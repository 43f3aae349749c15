"""`--leaf-url`: the agent uses a leaf nats-server it did not start, as a Kubernetes sidecar runs it.

The test plays the pod's leaf container: once the agent has written the remote
(`<state-dir>/sidecar-leaf/remote.conf`), it starts a plain nats-server whose config includes
that file and writes its pid beside it, dialling the hub's TLS leaf port. The agent registers
through it with its token, hands it the cluster's credentials (a reload, no restart), and then
receives its Descriptions with the sidecar as its only path to the hub.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from clusternet_nats.agent import sidecar
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.agent.registration import Enrollment, RegistrationSettings, saved_credentials
from clusternet_nats.api.apps import DeployerType, Description, DescriptionSpec
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.registry import by_kind
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.natsserver import free_port, nats_server_binary
from clusternet_nats.testing.waiting import eventually

from tests.registration.harness import RegistrationHub


async def start_sidecar(state_dir: Path, port: int) -> asyncio.subprocess.Process:
    """What deploy/k8s/child's leaf container runs: its own config, the agent's remote included."""
    directory = state_dir / sidecar.DIRECTORY
    config = state_dir / "sidecar.conf"
    config.write_text(
        f'server_name: sidecar\nlisten: 127.0.0.1:{port}\npid_file: "{directory / sidecar.PID_FILE}"\n'
        f'include "{sidecar.DIRECTORY}/{sidecar.REMOTE_FILE}"\n'
    )
    return await asyncio.create_subprocess_exec(
        nats_server_binary(), "-c", str(config), "--log", str(state_dir / "sidecar.log"), start_new_session=True
    )


async def test_agent_registers_and_receives_descriptions_through_a_sidecar_leaf(
    hub: RegistrationHub, tmp_path: Path
) -> None:
    state, port = tmp_path / "state", free_port()
    settings = RegistrationSettings(
        await hub.token(), state, hub.secure.leaf_url, hub.secure.pki.ca_cert, leaf_url=f"nats://127.0.0.1:{port}"
    )
    identity = single_cluster("side", None, {}, ClusterSyncMode.PULL)
    backend = SimCluster("side", Sizing())
    agent = ClusterAgent(identity, backend, 5.0, enrollment=Enrollment(settings, identity))
    # No hub client URL at all: the only path is the sidecar's outbound leaf link.
    options = CommonOptions(nats_url="nats://127.0.0.1:1", health_port=-1, jetstream_domain="hub")
    starting = asyncio.create_task(agent.start(options))
    leaf: asyncio.subprocess.Process | None = None
    try:
        remote = state / sidecar.DIRECTORY / sidecar.REMOTE_FILE
        await eventually(remote.exists, 20, what="the agent handed the sidecar its remote")
        leaf = await start_sidecar(state, port)
        await starting
        await eventually(lambda: agent.ready, 30, what="agent ready through the sidecar")
        assert agent.ctx is not None and agent.ctx.nc.connected_url is not None
        assert agent.ctx.nc.connected_url.port == port
        saved = saved_credentials(state).get("side")
        assert saved is not None and saved.secret in remote.read_text(), "the sidecar dials with the cluster's own"

        config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "side", "namespace": "default"}}
        spec = DescriptionSpec(deployer=DeployerType.GENERIC, raw=[json.dumps(config_map).encode()])
        descriptions: ObjectStore[Description] = ObjectStore(hub.nc.jetstream(), by_kind("Description"))
        await descriptions.create(Description.new("side-generic", identity.namespace, spec=spec))
        ref = ObjectRef("v1", "ConfigMap", "default", "side")
        await eventually(lambda: backend.objects.get(ref) is not None, 20, what="Description applied in the child")
    finally:
        if not starting.done():
            starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await agent.stop()
        if leaf is not None:
            leaf.terminate()
            await leaf.wait()

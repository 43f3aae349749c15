"""`python -m clusternet_nats.agent --bootstrap-token ...` as a process: registers, is Ready, exits 0.

Two pooled simulated clusters, each registering with the token and then connecting with its own
credentials; the process's own connection is its first cluster's and creates no buckets.
"""

from __future__ import annotations

from pathlib import Path

import psutil
from clusternet_nats.agent.registration import saved_credentials
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.registry import by_kind
from clusternet_nats.store import ObjectStore

from tests.registration.harness import RegistrationHub, running_agent


async def test_agent_process_registers_its_clusters(hub: RegistrationHub, tmp_path: Path) -> None:
    args = ("--nats-url", hub.secure.server.url, "--cluster-name", "pool", "--sim-clusters", "2")
    async with running_agent(hub, tmp_path / "state", *args):
        pass
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    assert sorted(c.metadata.name or "" for c in await clusters.list()) == ["pool-1", "pool-2"]
    assert sorted(saved_credentials(tmp_path / "state")) == ["pool-1", "pool-2"]


async def test_agent_process_behind_leaf_nodes(hub: RegistrationHub, tmp_path: Path) -> None:
    """Each pooled cluster runs its own leaf node; the process never dials the hub's client port."""
    args = (
        *("--nats-url", "nats://127.0.0.1:1", "--cluster-name", "edge", "--sim-clusters", "2"),
        *("--hub-leaf-url", hub.secure.leaf_url, "--hub-ca", str(hub.secure.pki.ca_cert)),
    )
    async with running_agent(hub, tmp_path / "state", *args):
        pass
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    assert sorted(c.metadata.name or "" for c in await clusters.list()) == ["edge-1", "edge-2"]
    state = str(tmp_path / "state")
    leaves = [p for p in psutil.process_iter(["cmdline"]) if any(state in arg for arg in p.info["cmdline"] or [])]
    assert leaves == [], "leaf nodes outlived the agent"

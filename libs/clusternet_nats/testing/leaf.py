"""A hub nats-server (JetStream domain `hub`, a leaf-node port) and a plain leaf nats-server dialling
it, an agent's side of the tunnel without the secured hub's auth callout: as bench/proxy.py and
tests/proxy run the hub and an agent as processes."""

from __future__ import annotations

from pathlib import Path

from clusternet_nats.testing.natsserver import NatsServer, free_port


def hub_and_leaf(workdir: Path) -> tuple[NatsServer, NatsServer]:
    """Both servers under `workdir`, not started: start the hub's first, stop the leaf first."""
    leaf_port = free_port()
    hub = NatsServer(
        store_dir=workdir / "hub-nats",
        jetstream_domain="hub",
        extra_config=f"leafnodes {{ listen: 127.0.0.1:{leaf_port} }}",
    )
    leaf = NatsServer(
        store_dir=workdir / "leaf-nats",
        server_name="leaf",
        jetstream_domain="leaf",
        extra_config=f'leafnodes {{ remotes: [ {{ url: "nats://127.0.0.1:{leaf_port}" }} ] }}',
    )
    return hub, leaf

"""The hub holds a TLS connection per watch (a proxied one or its own API's), and no longer the 256 KiB
read buffer asyncio's TLS transport allocates for each by default (runtime/tlsbuffers.py): a watch on
the hub's own API measured ~360 KiB with it, ~170 KiB with 64 KiB. Memory, not time: the hub's RSS
before and after 300 watches are opened and held."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import psutil
from clusternet_nats.testing.natsserver import NatsServer, free_port
from clusternet_nats.testing.system import ServiceProcess, ensure_admin_token, wait_ready

WATCHES = 300
CLUSTERS = "/apis/clusters.clusternet.io/v1beta1/managedclusters"


async def test_a_held_watch_costs_the_hub_well_under_the_default_tls_buffer(
    private_nats: NatsServer, tmp_path: Path
) -> None:
    # A NATS of its own: on the session's, every watch would start with the ManagedClusters other
    # tests left there (its initial ADDED events), which is not what is measured.
    token = ensure_admin_token(tmp_path / "tokens.csv")
    port = free_port()
    args = ["--nats-url", private_nats.url, "--listen", f"127.0.0.1:{port}", "--log-level", "warning"]
    args += ["--cert-dir", str(tmp_path / "certs"), "--token-auth-file", str(tmp_path / "tokens.csv")]
    hub = ServiceProcess("hub", "clusternet_nats.hub", args, tmp_path / "hub.log", free_port())
    hub.start()
    try:
        await asyncio.to_thread(wait_ready, [hub], 60)
        assert hub.proc is not None
        process = psutil.Process(hub.proc.pid)
        context = ssl.create_default_context(cafile=str(tmp_path / "certs" / "ca.crt"))
        connector = aiohttp.TCPConnector(ssl=context, limit=0)
        headers = {"Authorization": f"Bearer {token}"}
        async with aiohttp.ClientSession(f"https://127.0.0.1:{port}", headers=headers, connector=connector) as client:
            async with client.get(CLUSTERS) as warm:  # the routes' first use, not counted
                assert warm.status == 200
            before = process.memory_info().rss
            watches = await asyncio.gather(*(client.get(CLUSTERS, params={"watch": "1"}) for _ in range(WATCHES)))
            try:
                assert [w.status for w in watches] == [200] * WATCHES
                per_watch = (process.memory_info().rss - before) / WATCHES / 1024
                assert per_watch < 250, f"{per_watch:.0f} KiB per held watch (256 KiB TLS buffers are back?)"
            finally:
                for watch in watches:
                    watch.close()
    finally:
        hub.stop()

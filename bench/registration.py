"""Clusters registering at once through the hub's auth callout, optionally each behind its own
leaf node, until every one is Ready.

    .venv/bin/python bench/registration.py --clusters 200
    .venv/bin/python bench/registration.py --clusters 20 --leaf

Every cluster is a real ClusterAgent (simulated backend) holding only a bootstrap token: it
files its ClusterRegistrationRequest, gets approved, connects with its own credentials (with
--leaf: through a leaf nats-server it starts, dialling the hub's TLS leaf port) and heartbeats.
At most --concurrency agents are starting at any moment (a fleet comes up in waves, and the
callout answers one connection at a time). Prints the time until all are Ready and the resident
memory of the hub's nats-server and of the leaves.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path

import psutil
import structlog
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.cluster_agent import ClusterAgent
from clusternet_nats.agent.identity import single_cluster
from clusternet_nats.agent.registration import Enrollment, RegistrationSettings
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.hub.registration.testing import secured_hub
from clusternet_nats.runtime.service import CommonOptions
from clusternet_nats.testing.waiting import eventually


def rss_mib(processes: list[psutil.Process]) -> float:
    return sum(p.memory_info().rss for p in processes) / 2**20


async def main(clusters: int, leaf: bool, report_frequency: float, concurrency: int) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="cnet-bench-") as tmp:
        directory = Path(tmp)
        async with secured_hub(directory) as hub:
            leaf_url, ca = (hub.secure.leaf_url, hub.secure.pki.ca_cert) if leaf else (None, None)
            settings = RegistrationSettings(await hub.token(), directory / "state", leaf_url, ca)
            agents = []
            for i in range(clusters):
                ident = single_cluster(f"bench-{i}", None, {}, ClusterSyncMode.PULL)
                enrollment = Enrollment(settings, ident)
                agents.append(
                    ClusterAgent(ident, SimCluster(ident.name, Sizing()), report_frequency, enrollment=enrollment)
                )
            options = CommonOptions(nats_url=hub.secure.server.url, health_port=-1, jetstream_domain="hub")
            started = time.monotonic()
            try:
                gate = asyncio.Semaphore(concurrency)

                async def start(agent: ClusterAgent) -> None:
                    async with gate:
                        await agent.start(options)

                await asyncio.gather(*(start(agent) for agent in agents))
                await eventually(lambda: all(a.ready for a in agents), timeout=600, interval=0.2)
                elapsed = time.monotonic() - started
                state = str(directory / "state")
                leaves = [
                    p for p in psutil.process_iter(["cmdline"]) if any(state in a for a in p.info["cmdline"] or [])
                ]
                hub_server = psutil.Process(hub.secure.server.proc.pid)  # type: ignore[union-attr]
                print(f"clusters: {clusters}  leaf nodes: {len(leaves)}")
                print(f"registered and Ready: {elapsed:.2f} s ({clusters / elapsed:.0f} clusters/s)")
                print(f"hub nats-server RSS: {rss_mib([hub_server]):.0f} MiB")
                if leaves:
                    print(
                        f"leaf nats-servers RSS: {rss_mib(leaves):.0f} MiB ({rss_mib(leaves) / len(leaves):.1f} each)"
                    )
            finally:
                await asyncio.gather(*(agent.stop() for agent in agents), return_exceptions=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--leaf", action="store_true", help="each cluster behind its own leaf node")
    parser.add_argument("--report-frequency", type=float, default=30.0, help="heartbeat seconds")
    parser.add_argument("--concurrency", type=int, default=50, help="agents starting at the same moment")
    args = parser.parse_args()
    asyncio.run(main(args.clusters, args.leaf, args.report_frequency, args.concurrency))

"""The NATS CLI reads the live system: our buckets, a Description as JSON, and the streams.

This is how an operator inspects the system without our code (docs/architecture.md), so it
runs the real `nats` binary against a running System that has rolled out one Subscription.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clusternet_nats.testing.system import System
from clusternet_nats.testing.tools import Tools, run_tool
from clusternet_nats.testing.waiting import eventually

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    sut = System(tmp_path_factory.mktemp("system"), sim_clusters=1)
    sut.start(timeout=90)
    yield sut
    sut.stop()


async def nats(tools: Tools, system: System, *args: str) -> subprocess.CompletedProcess[str]:
    return await run_tool(tools.nats, "--server", system.nats_url, *args)


async def test_nats_cli_lists_buckets_prints_a_description_and_lists_streams(kube_tools: Tools, system: System) -> None:
    cnet = Path(sys.executable).parent / "cnet"
    applied = await run_tool(cnet, "--config", system.cnet_config, "apply", "-f", REPO / "examples" / "replication")
    assert applied.returncode == 0, applied.stderr

    async def description_key() -> str | None:
        listed = await nats(kube_tools, system, "kv", "ls", "descriptions")
        keys = [line.strip() for line in listed.stdout.splitlines() if line.strip().startswith("clusternet-")]
        return keys[0] if keys else None

    key = await eventually(description_key, 60, what="a Description in the descriptions bucket")

    buckets = await nats(kube_tools, system, "kv", "ls")
    assert buckets.returncode == 0, buckets.stderr
    for bucket in ("subscriptions", "descriptions", "descriptions-status", "managedclusters"):
        assert bucket in buckets.stdout.split(), f"{bucket} missing from `nats kv ls`:\n{buckets.stdout}"

    shown = await nats(kube_tools, system, "kv", "get", "descriptions", key)
    assert shown.returncode == 0, shown.stderr
    assert key in shown.stdout
    raw = await nats(kube_tools, system, "kv", "get", "descriptions", key, "--raw")
    description = json.loads(raw.stdout)
    assert description["kind"] == "Description"
    assert description["spec"]["deployer"] == "Generic"
    assert f"{description['metadata']['namespace']}.{description['metadata']['name']}" == key

    streams = await nats(kube_tools, system, "stream", "ls")
    assert streams.returncode == 0, streams.stderr
    assert "EVENTS" in streams.stdout
    with_buckets = await nats(kube_tools, system, "stream", "ls", "--all")
    assert "KV_descriptions" in with_buckets.stdout

"""`--manual-approval`: a request waits Pending until `cnet approve|deny clsrr NAME`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from clusternet_nats.agent.registration import RegistrationDenied, request_registration
from clusternet_nats.api.clusters import ClusterRegistrationRequestSpec, ManagedCluster
from clusternet_nats.api.registration import APPROVED, new_secret, registering_inbox_prefix
from clusternet_nats.api.registry import by_kind
from clusternet_nats.cli.main import app
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.waiting import eventually
from typer.testing import CliRunner, Result

from tests.registration.harness import Client, RegistrationHub, new_cluster_id, secured_hub


@pytest.fixture
async def manual_hub(tmp_path: Path) -> AsyncIterator[tuple[RegistrationHub, ServedHub]]:
    """The secured hub with --manual-approval, and its HTTP API for `cnet` (as admin)."""
    async with secured_hub(tmp_path, manual_approval=True) as hub, running_hub(hub.secure.url("hub")) as served:
        yield hub, served


async def cnet(served: ServedHub, *args: str) -> Result:
    return await asyncio.to_thread(lambda: CliRunner().invoke(app, [*served.cnet_args(), *args]))


async def ask(hub: RegistrationHub, cluster_id: str) -> asyncio.Task[object]:
    nc = await Client().connect(
        hub.secure.server.url, cluster_id, await hub.token(), registering_inbox_prefix(cluster_id)
    )
    spec = ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="manual")
    return asyncio.create_task(request_registration(nc, spec, new_secret(), pending_poll=0.1))


async def test_pending_until_approved(manual_hub: tuple[RegistrationHub, ServedHub]) -> None:
    hub, url = manual_hub
    cluster_id = new_cluster_id()
    waiting = await ask(hub, cluster_id)
    name = f"clusternet-{cluster_id}"

    async def pending() -> Result | None:
        # The registrar writes the request first and its Pending status just after.
        listed = await cnet(url, "get", "clsrr", name, "-o", "json")
        return listed if '"Pending"' in listed.output else None

    await eventually(pending, timeout=10, what="the request is listed as Pending")
    assert not waiting.done()
    clusters: ObjectStore[ManagedCluster] = ObjectStore(hub.nc.jetstream(), by_kind("ManagedCluster"))
    assert await clusters.list() == []

    result = await cnet(url, "approve", "clsrr", name)
    assert result.exit_code == 0 and "approved" in result.output, result.output
    reply = await asyncio.wait_for(waiting, 10)
    assert getattr(reply, "result", None) == APPROVED
    assert [c.metadata.name for c in await clusters.list()] == ["manual"]
    again = await cnet(url, "deny", "clsrr", name)
    assert again.exit_code == 1 and "already Approved" in again.output


async def test_denied_with_reason(manual_hub: tuple[RegistrationHub, ServedHub]) -> None:
    hub, url = manual_hub
    cluster_id = new_cluster_id()
    waiting = await ask(hub, cluster_id)
    name = f"clusternet-{cluster_id}"

    async def listed() -> bool:
        return (await cnet(url, "get", "clsrr", name)).exit_code == 0

    await eventually(listed, timeout=10, what="the request is listed")
    result = await cnet(url, "deny", "clsrr", name, "--reason", "unknown site")
    assert result.exit_code == 0 and "denied" in result.output, result.output
    with pytest.raises(RegistrationDenied, match="unknown site"):
        await asyncio.wait_for(waiting, 10)


async def test_only_clsrr_can_be_approved(manual_hub: tuple[RegistrationHub, ServedHub]) -> None:
    _, url = manual_hub
    result = await cnet(url, "approve", "mcls", "x")
    assert result.exit_code == 1 and "only clusterregistrationrequests" in result.output

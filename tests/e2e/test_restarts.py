"""Kill any one service, or restart NATS, or cut the power to all of it, during a rollout or a
deletion: the system converges, nothing is lost and nothing is duplicated."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from pathlib import Path
from typing import Any

import nats
import pytest
from clusternet_nats.agent.backends.sim.persistence import saved_states
from clusternet_nats.api.predictor import AccommodationReply, AccommodationRequest
from clusternet_nats.api.registry import by_kind
from clusternet_nats.predictor.messages import accommodation_subject
from clusternet_nats.store import object_key
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually
from nats.aio.msg import Msg

from .conftest import APPS, CLUSTERS, HubClient, child_objects, cnet, owned_by, write_app


async def converged(hub: HubClient, name: str, clusters: int = 3) -> dict[str, Any] | None:
    """Completed everywhere, with exactly one Base and one Description per cluster."""
    sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/{name}")
    status = (sub or {}).get("status") or {}
    if status.get("completedReleases") != clusters:
        return None
    owned = {kind: owned_by(await hub.items(f"{APPS}/{kind}"), name) for kind in ("bases", "descriptions")}
    if len(owned["bases"]) != clusters or len(owned["descriptions"]) != clusters:
        return None
    if {d["metadata"]["namespace"] for d in owned["descriptions"]} != {
        b["metadata"]["namespace"] for b in owned["bases"]
    }:
        return None
    return sub


@pytest.mark.parametrize("service", ["scheduler", "deployer", "agent"])
async def test_rollout_waits_for_a_killed_link_of_the_chain_and_converges_after(
    system: System, hub: HubClient, tmp_path: Path, service: str
) -> None:
    """SIGKILL one service, apply while it is down, restart it: exactly one Base and one
    Description per cluster, and every release completed."""
    name = f"kill-{service}"
    system.services[service].kill()
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
    assert result.returncode == 0, result.stderr
    await eventually(lambda: hub.get(f"{APPS}/namespaces/default/subscriptions/{name}"), 10)
    assert await converged(hub, name) is None, f"nothing can complete while the {service} is down"
    system.services[service].start()
    await system.wait_ready_async(60, (service,))
    sub = await eventually(lambda: converged(hub, name), 60, what=f"{name} converged after restarting {service}")
    assert len(sub["status"]["bindingClusters"]) == 3


async def test_killed_hub_loses_nothing_it_accepted(system: System, hub: HubClient, tmp_path: Path) -> None:
    name = "kill-hub"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
    assert result.returncode == 0, result.stderr
    system.services["hub"].kill()
    system.services["hub"].start()
    await system.wait_ready_async(60, ("hub",))
    await eventually(lambda: converged(hub, name), 60, what="rollout accepted before the hub died")


async def test_killed_predictor_answers_again_after_restart(system: System, hub: HubClient) -> None:
    system.services["predictor"].kill()
    system.services["predictor"].start()
    await system.wait_ready_async(60, ("predictor",))
    mc = (await hub.items(f"{CLUSTERS}/managedclusters"))[0]
    request = AccommodationRequest.model_validate(
        {"requirements": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}, "replicas": 1}
    )
    nc = await nats.connect(system.nats_url)
    try:
        msg = await nc.request(
            accommodation_subject(mc["metadata"]["namespace"], mc["metadata"]["name"]), request.to_json(), timeout=5
        )
    finally:
        await nc.close()
    reply = AccommodationReply.model_validate_json(msg.data)
    assert reply.error is None
    # 3 simulated nodes of 4 CPUs fit 12 one-CPU replicas, less what earlier tests' apps request.
    assert 0 < reply.max_acceptable_replicas <= 12


async def test_nats_restart_every_service_resumes(system: System, hub: HubClient, tmp_path: Path) -> None:
    system.nats.restart()
    back = time.monotonic()
    await system.wait_ready_async(30)
    resumed = time.monotonic() - back
    assert resumed < 5, f"services took {resumed:.1f}s to be ready again after NATS came back"
    name = "after-nats-restart"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
    assert result.returncode == 0, result.stderr
    await eventually(lambda: converged(hub, name), 30, what="rollout after a NATS restart")



async def _reached(hub: HubClient, name: str, stage: str) -> bool:
    """Whether the rollout of `name` got at least as far as `stage`."""
    if stage == "accepted":
        return True
    if stage == "bound":
        sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/{name}")
        return bool(((sub or {}).get("status") or {}).get("bindingClusters"))
    return bool(owned_by(await hub.items(f"{APPS}/descriptions"), name))


@pytest.mark.parametrize("stage", ["accepted", "bound", "described"])
async def test_every_process_killed_at_once_mid_rollout_loses_nothing(
    system: System, hub: HubClient, tmp_path: Path, stage: str
) -> None:
    """A power cut: NATS and every service, the agents of the clusters too, SIGKILLed in the same
    moment, once the rollout reached `stage` (the hub accepted the Subscription; the scheduler
    bound it; the first Description was written); all started again, the rollout completes with
    exactly one Base and one Description per cluster, and a new one rolls out after it."""
    name = f"power-cut-{stage}"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
    assert result.returncode == 0, result.stderr
    await eventually(lambda: _reached(hub, name, stage), 30, what=f"{name} {stage}", interval=0.01)
    await _power_cut(system)
    sub = await eventually(lambda: converged(hub, name), 60, what=f"{name} converged after the power cut")
    assert len(sub["status"]["bindingClusters"]) == 3
    after = f"after-{name}"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, after)))
    assert result.returncode == 0, result.stderr
    await eventually(lambda: converged(hub, after), 60, what=f"a rollout after the power cut at {stage}")


async def test_every_process_killed_at_once_mid_deletion_leaves_nothing_behind(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    """A Subscription's deletion waits for every child to prune (its finalizer); the power cut
    as the deletion starts: started again, the deletion finishes, nothing of it is left on the
    hub or in any child."""
    name = "power-cut-deletion"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, name)))
    assert result.returncode == 0, result.stderr
    await eventually(lambda: converged(hub, name), 60, what=f"{name} rolled out")

    def holding() -> list[str]:
        """The children whose saved state holds the Deployment."""
        states = saved_states(system.workdir / "agent-state")
        return [c for c in states if ("Deployment", name, "web") in child_objects(system, c)]

    await eventually(lambda: len(holding()) == 3, 10, what="the Deployment in every child")

    path = f"{APPS}/namespaces/default/subscriptions/{name}"
    # Cut as the hub stores the deletionTimestamp: the deletion, which waits for every child to
    # prune, has just begun (`cnet delete` may be cut off before its answer: what the hub stored
    # stands).
    cut = asyncio.Event()
    nc = await nats.connect(system.nats_url)

    async def stored(msg: Msg) -> None:
        if msg.data and json.loads(msg.data)["metadata"].get("deletionTimestamp") and not cut.is_set():
            _signal_all(system)
            cut.set()

    info = by_kind("Subscription")
    await nc.subscribe(f"$KV.{info.bucket}.{object_key('default', name)}", cb=stored)
    deleted = asyncio.create_task(asyncio.to_thread(cnet, system, "delete", "subscription", name, "-n", "default"))
    await asyncio.wait_for(cut.wait(), 30)
    with contextlib.suppress(Exception):
        await nc.close()
    await deleted
    assert holding(), "not cut midway: every child had pruned already"
    await _start_all(system)

    async def gone() -> bool:
        if await hub.get(path) is not None:
            return False
        owned = [owned_by(await hub.items(f"{APPS}/{kind}"), name) for kind in ("bases", "descriptions")]
        return owned == [[], []] and holding() == []

    await eventually(gone, 60, what=f"{name} deleted everywhere after the power cut")


async def _power_cut(system: System) -> None:
    """NATS and every service, the agents too, SIGKILLed in the same moment; then all started."""
    _signal_all(system)
    await _start_all(system)


def _signal_all(system: System) -> None:
    processes = [s.proc for s in system.services.values() if s.proc is not None]
    assert system.nats.proc is not None and len(processes) == len(system.services)
    for proc in [system.nats.proc, *processes]:
        proc.send_signal(signal.SIGKILL)  # all signalled before any is waited for


async def _start_all(system: System) -> None:
    """Every process reaped (killed by `_signal_all`), then NATS and the services started."""
    for service in system.services.values():
        service.kill()
    system.nats.kill()
    await asyncio.to_thread(system.start, 90)

"""Fixtures and helpers for registration, isolation and tunnel tests: the secured hub
(`hub.registration.testing.secured_hub`), and clients that register and connect as a cluster
the way an agent does, recording what the server reports to error_cb.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import nats
import pytest
from clusternet_nats.agent.registration import RegistrationDenied, request_registration
from clusternet_nats.api.clusters import ClusterRegistrationRequestSpec
from clusternet_nats.api.registration import (
    DENIED,
    RegistrationReply,
    inbox_prefix,
    new_secret,
    registering_inbox_prefix,
)
from clusternet_nats.hub.registration.testing import RegistrationHub, secured_hub
from clusternet_nats.runtime.tunnel import request_cluster
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.system import ServiceProcess
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError


@dataclass
class Client:
    """One connection of a would-be cluster, with what the server told it."""

    errors: list[str] = field(default_factory=list)
    nc: NATS | None = None

    async def connect(self, url: str, user: str, password: str | None, inbox: str | None = None) -> NATS:
        """Connects as `user` (with its inbox prefix, or `inbox`); without a password, to a leaf
        that needs none."""

        async def on_error(err: Exception) -> None:
            self.errors.append(str(err))

        self.nc = await nats.connect(
            url.replace("nats://", f"nats://{user}:{password}@") if password else url,
            inbox_prefix=inbox or inbox_prefix(user),
            error_cb=on_error,
            allow_reconnect=False,
            connect_timeout=2,
        )
        return self.nc


async def register(url: str, cluster_id: str, token: str, secret: str | None = None) -> tuple[RegistrationReply, str]:
    """Files a ClusterRegistrationRequest as an agent holding `token` does; denials are replies too."""
    secret = secret or new_secret()
    nc = await Client().connect(url, cluster_id, token, registering_inbox_prefix(cluster_id))
    try:
        spec = ClusterRegistrationRequestSpec(cluster_id=cluster_id, cluster_name="c")
        return await request_registration(nc, spec, secret, timeout=10), secret
    except RegistrationDenied as err:
        return RegistrationReply(result=DENIED, error_message=str(err)), secret
    finally:
        await nc.close()


def new_cluster_id() -> str:
    return str(uuid.uuid4())


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RegistrationHub]:
    async with secured_hub(tmp_path) as running:
        yield running


@contextlib.asynccontextmanager
async def running_agent(
    hub: RegistrationHub, state_dir: Path, *args: str, timeout: float = 40
) -> AsyncIterator[ServiceProcess]:
    """An agent process in registration mode: started, ready, then stopped with SIGTERM and exit 0."""
    agent = ServiceProcess(
        name="agent",
        module="clusternet_nats.agent",
        args=[
            *args,
            *("--bootstrap-token", await hub.token(), "--state-dir", str(state_dir)),
            *("--jetstream-domain", "hub", "--cluster-status-update-frequency", "5"),
        ],
        log_path=state_dir.parent / "agent.log",
        health_port=free_port(),
    )
    agent.start()
    try:
        await eventually(lambda: asyncio.to_thread(agent.ready), timeout=timeout, what="agent /readyz")
        yield agent
    finally:
        code = await asyncio.to_thread(agent.stop)
    assert code == 0, agent.log_path.read_text()[-3000:]


async def answers_hub(hub: RegistrationHub, namespace: str, subject: str) -> bool:
    """Whether the cluster of `namespace` answers the hub on `subject` yet: a subscription reaches
    the hub's servers a moment after the cluster's own server took it (routes, a leaf link)."""
    try:
        await request_cluster(hub.nc, namespace, subject, b"", timeout=5)
    except NoRespondersError:
        return False
    return True

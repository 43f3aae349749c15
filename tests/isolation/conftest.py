from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.isolation.attackers import Attacker, Victim, registered, victim_agent
from tests.registration.harness import RegistrationHub, hub

__all__ = ["hub"]


@pytest.fixture
async def attacker(hub: RegistrationHub) -> AsyncIterator[Attacker]:
    """Cluster A: registered, connected with its own credential."""
    a = await registered(hub)
    try:
        yield a
    finally:
        await a.close()


@pytest.fixture
async def bystander(hub: RegistrationHub) -> AsyncIterator[Attacker]:
    """Cluster B as a plain registered connection (no agent): its records and requests are the target."""
    b = await registered(hub)
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture
async def victim(hub: RegistrationHub, tmp_path: Path) -> AsyncIterator[Victim]:
    """Cluster B as a REAL agent process (registration mode, sim backend, Pull)."""
    async with victim_agent(hub, tmp_path) as b:
        yield b

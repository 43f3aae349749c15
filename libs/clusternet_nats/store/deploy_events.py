"""Telling humans how a Description deployed: one Event per outcome of each version of it.

The agent (Pull) and the deployer's pusher (Push) both apply Descriptions, and both are
reconcilers that may run the same Description many times; an Event for every run would bury the
one that matters. What the Event says is `domain.descriptions`' rule.
"""

from __future__ import annotations

from typing import Any

from clusternet_nats.api.apps import Description, DescriptionStatus
from clusternet_nats.domain.descriptions import deployed
from clusternet_nats.store.events import EventRecorder


class DeployOutcomes:
    def __init__(self, recorder: EventRecorder, log: Any) -> None:
        self.recorder = recorder
        self.log = log
        self._reported: dict[str, tuple[int, str | None]] = {}

    async def report(self, key: str, revision: int, desc: Description, status: DescriptionStatus) -> None:
        """Records the outcome of this revision of the Description, unless it already was."""
        outcome = (revision, status.reason)
        if self._reported.get(key) == outcome:
            return
        self._reported[key] = outcome
        event = deployed(desc, status)
        if event.normal:
            self.log.info("description.deployed", description=key)
            await self.recorder.normal(desc, event.reason, event.message)
        else:
            self.log.warning("description.failed", description=key, reason=status.reason)
            await self.recorder.warning(desc, event.reason, event.message)

    def forget(self, key: str) -> bool:
        """Drops what was reported for a removed Description; True if anything had been."""
        return self._reported.pop(key, None) is not None

"""How a Description's deploy outcome reads to a human: Clusternet's Event reasons and messages.

The agent (Pull), the deployer's pusher (Push) and the deployer's reconciler (on the Subscription)
all tell of the same outcome; the phase decides success or failure here, once, so the three say
it alike. Recording the Event, and not repeating it, is `store.deploy_events`' job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clusternet_nats.api.apps import Description, DescriptionPhase, DescriptionStatus

SUCCESSFULLY_DEPLOYED = "SuccessfullyDeployed"
UNSUCCESSFULLY_DEPLOYED = "UnSuccessfullyDeployed"


@dataclass(frozen=True)
class DeployEvent:
    """An Event to record: Normal when `normal`, else Warning."""

    normal: bool
    reason: str
    message: str


def deployed(desc: Description, status: DescriptionStatus) -> DeployEvent:
    """The Event on the Description for the outcome `status` reports."""
    name = desc.namespaced_name()
    if status.phase is DescriptionPhase.SUCCESS:
        return DeployEvent(True, SUCCESSFULLY_DEPLOYED, f"successfully deployed Description {name}")
    return DeployEvent(False, UNSUCCESSFULLY_DEPLOYED, f"failed to deploy Description {name}: {status.reason}")


def restored(desc: Description, objects: Sequence[str]) -> DeployEvent:
    """The Event when the agent put back objects changed or deleted in the child (drift): what
    Clusternet's agent records after such a re-apply (Recovery), naming what was put back."""
    message = f"successfully deployed Description {desc.namespaced_name()}: restored {', '.join(objects)}"
    return DeployEvent(True, SUCCESSFULLY_DEPLOYED, f"{message} (changed or deleted in the cluster)")


def failed(desc: Description, status: DescriptionStatus | None) -> DeployEvent | None:
    """The Warning a Subscription shows for one of its Descriptions; None unless it failed."""
    if status is None or status.phase is not DescriptionPhase.FAILURE:
        return None
    message = f"Description {desc.namespaced_name()} failed: {status.reason or 'no reason given'}"
    return DeployEvent(False, UNSUCCESSFULLY_DEPLOYED, message)

"""What the Events about a Description's deployment say, as Clusternet's do."""

from __future__ import annotations

from clusternet_nats.api.apps import DeployerType, Description, DescriptionPhase, DescriptionSpec, DescriptionStatus
from clusternet_nats.domain.descriptions import DeployEvent, deployed, failed

DESC = Description.new("web-abcde-generic", "clusternet-xyz", spec=DescriptionSpec(deployer=DeployerType.GENERIC))


def test_success_is_a_normal_event_and_anything_else_a_warning_with_the_reason() -> None:
    ok = deployed(DESC, DescriptionStatus(phase=DescriptionPhase.SUCCESS))
    assert ok == DeployEvent(
        True, "SuccessfullyDeployed", "successfully deployed Description clusternet-xyz/web-abcde-generic"
    )
    bad = deployed(DESC, DescriptionStatus(phase=DescriptionPhase.FAILURE, reason="quota exceeded"))
    assert bad == DeployEvent(
        False, "UnSuccessfullyDeployed", "failed to deploy Description clusternet-xyz/web-abcde-generic: quota exceeded"
    )


def test_a_subscription_is_warned_only_of_failed_descriptions() -> None:
    assert failed(DESC, None) is None
    assert failed(DESC, DescriptionStatus(phase=DescriptionPhase.SUCCESS)) is None
    assert failed(DESC, DescriptionStatus(phase=DescriptionPhase.PENDING)) is None
    warning = failed(DESC, DescriptionStatus(phase=DescriptionPhase.FAILURE))
    assert warning == DeployEvent(
        False, "UnSuccessfullyDeployed", "Description clusternet-xyz/web-abcde-generic failed: no reason given"
    )

"""The deployer's --feature-gates, read as Kubernetes components read them; bad input is refused
with the gate or the item named."""

import pytest
import typer
from clusternet_nats.deployer.__main__ import feature_gates


def test_known_gate_parses_and_empty_means_defaults() -> None:
    assert feature_gates("FeedInUseProtection=true") == {"FeedInUseProtection": True}
    assert feature_gates(" FeedInUseProtection=False ,") == {"FeedInUseProtection": False}
    assert feature_gates("") == {"FeedInUseProtection": False}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Recovery=true", "unrecognized feature gate 'Recovery' \\(known: FeedInUseProtection\\)"),
        ("FeedInUseProtection", "feature gate 'FeedInUseProtection' needs =true or =false"),
        ("FeedInUseProtection=yes", "needs =true or =false, not 'FeedInUseProtection=yes'"),
    ],
)
def test_bad_gates_are_refused_by_name(value: str, message: str) -> None:
    with pytest.raises(typer.BadParameter, match=message):
        feature_gates(value)

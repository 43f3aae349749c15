"""Every service and the CLI are programs a person can ask for help."""

import subprocess
import sys

import pytest

SERVICES = ["hub", "scheduler", "deployer", "predictor", "agent", "bridge"]


@pytest.mark.parametrize("service", SERVICES)
def test_service_help_lists_shared_settings(service: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"clusternet_nats.{service}", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"COLUMNS": "200", "TERM": "dumb", "PATH": ""},
    )
    assert result.returncode == 0, result.stderr
    for flag in ("--nats-url", "--nats-creds", "--log-level", "--health-port"):
        assert flag in result.stdout
    assert "CNET_NATS_URL" in result.stdout


def test_cnet_help_lists_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clusternet_nats.cli.main", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"COLUMNS": "200", "TERM": "dumb", "PATH": ""},
    )
    assert result.returncode == 0, result.stderr
    for command in ("apply", "get", "describe", "delete"):
        assert command in result.stdout

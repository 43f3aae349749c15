"""Every service and the CLI are programs a person can ask for help."""

import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("t1,alice\n", [], "tokens.csv:1: expected token,user,uid"),
        ("t1,alice,uid\n", ["--tls-cert-file", "/nonexistent.crt"], "go together"),
        ("t1,alice,uid\n", ["--client-ca-file", "/nonexistent-ca.crt"], "--client-ca-file: /nonexistent-ca.crt"),
    ],
)
def test_hub_refuses_unusable_security_settings(tmp_path: Path, content: str, extra: list[str], message: str) -> None:
    """A broken token file or half a certificate stops the hub at once with one line naming it."""
    (tmp_path / "tokens.csv").write_text(content)
    result = subprocess.run(
        [sys.executable, "-m", "clusternet_nats.hub", "--token-auth-file", str(tmp_path / "tokens.csv"), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"COLUMNS": "300", "TERM": "dumb", "PATH": "", "NO_COLOR": "1"},
    )
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split()), result.stderr
    assert "Traceback" not in result.stderr

"""deploy/compose/compose.yaml keeps the properties the process test cannot see: ports on loopback
only, each container mounting only its own secrets, nothing dialling NATS without credentials,
and the committed nats.conf being the renderer's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from clusternet_nats.api import generated
from clusternet_nats.runtime import natsconf

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
COMPOSE: dict[str, Any] = yaml.safe_load((DEPLOY / "compose" / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]


def test_committed_nats_configs_are_the_renderers() -> None:
    assert generated.drifted(natsconf.generate, DEPLOY) == [], "run: python -m clusternet_nats.runtime.natsconf"


def test_ports_are_published_on_loopback_only() -> None:
    published = [(name, port) for name, svc in SERVICES.items() for port in svc.get("ports", [])]
    assert published, "the hub's API and NATS are reachable from the host"
    assert all(str(port).startswith("127.0.0.1:") for _, port in published), published


def test_each_container_mounts_only_its_own_secrets() -> None:
    secret_volumes = {v for v in COMPOSE["volumes"] if v.endswith("-secrets")}
    assert secret_volumes == {f"{c}-secrets" for c in ("nats", *natsconf.SERVICE_USERS, "agent")}
    init = {m.split(":")[0] for m in SERVICES["init"]["volumes"]}
    assert secret_volumes <= init, "init writes every consumer's volume"
    for name, svc in SERVICES.items():
        if name == "init":
            continue
        mounted = {str(m).split(":")[0] for m in svc.get("volumes", [])} & secret_volumes
        assert mounted == {f"{name}-secrets"}, (name, mounted)


def test_nothing_dials_nats_without_credentials() -> None:
    for name, svc in SERVICES.items():
        env = svc.get("environment") or {}
        assert "CNET_NATS_URL" not in env, f"{name}: its NATS URL (with its user) comes from its env file"
        command = " ".join(map(str, svc.get("command", [])))
        if name not in ("init", "nats"):
            assert ". /run/clusternet/env" in command, name
    nats = SERVICES["nats"]
    assert "./nats.conf:/etc/nats/nats.conf:ro" in nats["volumes"]
    assert "nats-secrets:/etc/nats/secrets:ro" in nats["volumes"]
    assert SERVICES["nats"]["depends_on"]["init"]["condition"] == "service_completed_successfully"

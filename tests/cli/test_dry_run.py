"""`cnet apply --dry-run` validates locally: Clusternet's examples pass, mistakes are pinpointed."""

from __future__ import annotations

from pathlib import Path

import pytest
from clusternet_nats.cli.main import app
from clusternet_nats.testing import compat
from typer.testing import CliRunner


@pytest.mark.parametrize("path", compat.compat_files(compat.EXAMPLES))
def test_every_clusternet_example_is_valid(path: Path) -> None:
    result = CliRunner().invoke(app, ["apply", "--dry-run", "-f", str(path)])
    assert result.exit_code == 0, result.output
    assert "valid (dry run)" in result.output


def test_a_directory_validates_every_file_in_it() -> None:
    example = compat.compat_path(compat.EXAMPLES, "replication-scheduling")
    result = CliRunner().invoke(app, ["apply", "--dry-run", "-f", str(example)])
    assert result.exit_code == 0, result.output
    assert "subscription.apps.clusternet.io/app-demo valid (dry run)" in result.output
    assert "deployment.apps/my-nginx valid (dry run)" in result.output


def test_errors_name_file_document_object_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: fine}\n---\n"
        "apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\nmetadata: {name: app, namespace: team}\n"
        "spec:\n  schedulingStrategy: Sideways\n  subscribers: [{clusterAffinity: {}}]\n  feeds: []\n"
    )
    also_bad = tmp_path / "also-bad.yaml"
    also_bad.write_text("apiVersion: apps.clusternet.io/v1alpha1\nkind: HelmChart\nmetadata: {name: c}\nspec: {}\n")
    result = CliRunner().invoke(app, ["apply", "--dry-run", "-f", str(bad), "-f", str(also_bad)])
    assert result.exit_code == 1
    assert f"{bad}: document 2 (Subscription team/app): spec.schedulingStrategy:" in result.output
    assert f"{also_bad}: document 1 (HelmChart default/c): spec.repo:" in result.output
    assert "valid (dry run)" not in result.output
    assert "Traceback" not in result.output


def test_malformed_yaml_and_missing_file_are_reported(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: [unclosed\n")
    result = CliRunner().invoke(app, ["apply", "--dry-run", "-f", str(broken), "-f", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 1
    assert f"{broken}: document 1: malformed YAML" in result.output
    assert "nope.yaml: no such file or directory" in result.output

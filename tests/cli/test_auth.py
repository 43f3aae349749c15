"""cnet's config file and contexts against a hub that requires credentials: tokens, client
certificates, the hub's CA, and refusals printed as one line."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml
from clusternet_nats.cli import config as cnet_config
from clusternet_nats.hub.testing import ServedHub

from .conftest import VIEWER, run_cnet


def _lines(output: str) -> list[str]:
    """cnet's own lines: the in-process hub logs to the same captured stdout."""
    return [line for line in output.splitlines() if line.strip() and "[info" not in line and "[debug" not in line]


def _two_contexts(hub: ServedHub, path: Path) -> Path:
    cluster = cnet_config.Cluster(server=hub.url, certificate_authority=str(hub.ca_file))
    cnet_config.write_context(path, "admin", cluster, cnet_config.User(token=hub.admin_token))
    cnet_config.write_context(path, "viewer", cluster, cnet_config.User(token=hub.tokens[VIEWER]), use=False)
    return path


async def test_no_credentials_is_one_line(served_hub: ServedHub) -> None:
    result = await run_cnet(
        "--server", served_hub.url, "--certificate-authority", str(served_hub.ca_file), "get", "subs"
    )
    assert result.exit_code == 1
    assert _lines(result.output) == ["error: You must be logged in to the server (Unauthorized)"]


async def test_wrong_token_is_one_line(served_hub: ServedHub) -> None:
    result = await run_cnet(*served_hub.cnet_args(), "--token", "wrong", "get", "subs")
    assert result.exit_code == 1
    assert _lines(result.output) == ["error: You must be logged in to the server (Unauthorized)"]


async def test_untrusted_certificate_is_one_line(served_hub: ServedHub) -> None:
    result = await run_cnet("--server", served_hub.url, "--token", served_hub.admin_token, "get", "subs")
    assert result.exit_code == 1
    (line,) = _lines(result.output)
    assert line.startswith(f"error: cannot verify the hub's certificate at {served_hub.url}")
    assert "certificate-authority" in line


async def test_forbidden_is_kubectls_line(served_hub: ServedHub, unique_ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "sub.yaml"
    manifest.write_text(
        f"apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\nmetadata: {{name: s, namespace: {unique_ns}}}\n"
        "spec: {subscribers: [{clusterAffinity: {}}], feeds: [{apiVersion: v1, kind: ConfigMap, name: c}]}\n"
    )
    result = await run_cnet(*served_hub.cnet_args(VIEWER), "apply", "-f", str(manifest))
    assert result.exit_code == 1
    assert _lines(result.output) == [
        f'Error from server (Forbidden): subscriptions.apps.clusternet.io "s" is forbidden: User "{VIEWER}" cannot '
        f'update resource "subscriptions" in API group "apps.clusternet.io" in the namespace "{unique_ns}"'
    ]
    listed = await run_cnet(*served_hub.cnet_args(VIEWER), "get", "subs", "-A")
    assert listed.exit_code == 0, listed.output


async def test_contexts_and_cnet_config_env(
    served_hub: ServedHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _two_contexts(served_hub, tmp_path / "config")
    monkeypatch.setenv("CNET_CONFIG", str(path))
    assert (await run_cnet("token", "list")).exit_code == 0  # admin: the current context
    as_viewer = await run_cnet("--context", "viewer", "token", "list")
    assert as_viewer.exit_code == 1 and "Forbidden" in as_viewer.output
    contexts = await run_cnet("config", "get-contexts")
    assert contexts.exit_code == 0
    rows = [line.split() for line in _lines(contexts.output)]
    assert rows[0] == ["CURRENT", "NAME", "SERVER", "AUTHINFO"]
    assert ["*", "admin", served_hub.url, "admin"] in rows and ["viewer", served_hub.url, "viewer"] in rows
    switched = await run_cnet("config", "use-context", "viewer")
    assert switched.exit_code == 0 and 'Switched to context "viewer".' in switched.output
    assert _lines((await run_cnet("config", "current-context")).output) == ["viewer"]
    assert (await run_cnet("token", "list")).exit_code == 1
    view = await run_cnet("config", "view")
    assert served_hub.admin_token not in view.output and "REDACTED" in view.output
    raw = await run_cnet("config", "view", "--raw")
    assert served_hub.admin_token in raw.output
    missing = await run_cnet("--context", "nope", "get", "subs")
    assert missing.exit_code == 1 and _lines(missing.output) == [f'error: context "nope" does not exist in {path}']
    assert oct(path.stat().st_mode & 0o777) == "0o600"


async def test_client_certificate_context(served_hub: ServedHub, tmp_path: Path) -> None:
    cert = served_hub.client_cert("cli-admin", ["system:masters"])
    path = tmp_path / "config"
    cnet_config.write_context(
        path,
        "cert",
        cnet_config.Cluster(server=served_hub.url, certificate_authority=str(served_hub.ca_file)),
        cnet_config.User(client_certificate=str(cert.cert), client_key=str(cert.key)),
    )
    result = await run_cnet("--config", str(path), "token", "list")
    assert result.exit_code == 0, result.output


def test_relative_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "config"
    path.parent.mkdir()
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://hub:8080", "certificate-authority": "ca.crt"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    settings = cnet_config.settings(cnet_config.load(path), path, None, cnet_config.Overrides(token="flag"))
    assert settings.certificate_authority == tmp_path / "conf" / "ca.crt"
    assert (settings.server, settings.token) == ("https://hub:8080", "flag")  # a flag replaces one field only
    merged = cnet_config.merge(cnet_config.load(path), "y", cnet_config.Cluster(server="https://b"), cnet_config.User())
    assert [c.name for c in merged.contexts] == ["x", "y"] and merged.current_context == "y"


async def test_certificate_authority_data(served_hub: ServedHub, tmp_path: Path) -> None:
    """A context may carry the CA inline, base64 of PEM, as kubeconfigs do."""
    data = base64.b64encode(served_hub.ca_file.read_bytes()).decode()
    path = tmp_path / "config"
    cluster = cnet_config.Cluster(server=served_hub.url, certificate_authority_data=data)
    cnet_config.write_context(path, "inline", cluster, cnet_config.User(token=served_hub.admin_token))
    assert (await run_cnet("--config", str(path), "token", "list")).exit_code == 0
    broken = cnet_config.Cluster(server=served_hub.url, certificate_authority_data="not base64!")
    cnet_config.write_context(path, "inline", broken, cnet_config.User(token=served_hub.admin_token))
    result = await run_cnet("--config", str(path), "token", "list")
    assert result.exit_code == 1 and "certificate-authority-data is not base64-encoded PEM" in result.output

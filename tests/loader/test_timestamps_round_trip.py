"""A timestamp a user writes comes back as the string written: through `cnet apply`, through the
hub's HTTP API with a YAML body, in the store, on reading back, and through an override."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.api import Localization, Manifest
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH
from clusternet_nats.api.registry import by_kind
from clusternet_nats.api.yamljson import load_yaml
from clusternet_nats.cli.main import app
from clusternet_nats.deployer.overrides import SourcedOverride, apply_overrides
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.store import ObjectStore
from clusternet_nats.testing.natsserver import NatsServer
from nats.js import JetStreamContext
from typer.testing import CliRunner, Result

APPS = "/apis/apps.clusternet.io/v1alpha1"
WRITTEN = {"when": "2024-01-02", "at": "2024-01-02T10:00:00Z", "spaced": "2001-12-14 21:59:43.10 -5"}


def configmap(namespace: str) -> str:
    return f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: dates, namespace: {namespace}}}
data:
  when: 2024-01-02
  at: 2024-01-02T10:00:00Z
  spaced: 2001-12-14 21:59:43.10 -5
"""


def localization(namespace: str) -> str:
    return f"""\
apiVersion: apps.clusternet.io/v1alpha1
kind: Localization
metadata: {{name: later, namespace: {namespace}}}
spec:
  feed: {{apiVersion: v1, kind: ConfigMap, name: dates, namespace: {namespace}}}
  overrides:
  - name: move-the-date
    type: MergePatch
    value: |
      data:
        when: 2024-03-04
"""


@pytest.fixture(scope="module")
async def served_hub(nats_server: NatsServer) -> AsyncIterator[ServedHub]:
    async with running_hub(nats_server.url) as hub:
        yield hub


@pytest.fixture(autouse=True)
def no_home_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CNET_CONFIG", str(tmp_path / "no-cnet-config"))


async def cnet(hub: ServedHub, *args: str) -> Result:
    return await asyncio.to_thread(lambda: CliRunner().invoke(app, [*hub.cnet_args(), *args]))


async def stored(js: JetStreamContext, namespace: str) -> tuple[Manifest, Localization]:
    """What the store holds, checked down to the bytes: the value is the string written."""
    manifests: ObjectStore[Manifest] = ObjectStore(js, by_kind("Manifest"))
    name = f"configmaps.{namespace}.dates"
    raw = await manifests.bucket.get(f"clusternet-reserved.{name}")
    assert raw is not None and b'"when":"2024-01-02"' in raw[0] and b'"at":"2024-01-02T10:00:00Z"' in raw[0]
    manifest = await manifests.require("clusternet-reserved", name)
    loc: ObjectStore[Localization] = ObjectStore(js, by_kind("Localization"))
    return manifest, await loc.require(namespace, "later")


def overridden(manifest: Manifest, loc: Localization) -> Any:
    overrides = [SourcedOverride(loc, config) for config in loc.spec.overrides or []]
    generic, _ = apply_overrides(overrides, manifest.template)
    return generic["data"]


async def test_cnet_apply_keeps_timestamps_as_written(
    served_hub: ServedHub, js: JetStreamContext, unique_ns: str, tmp_path: Path
) -> None:
    (tmp_path / "configmap.yaml").write_text(configmap(unique_ns))
    (tmp_path / "localization.yaml").write_text(localization(unique_ns))

    result = await cnet(served_hub, "apply", "-f", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "configmap/dates created" in result.output

    manifest, loc = await stored(js, unique_ns)
    assert manifest.template["data"] == WRITTEN
    assert overridden(manifest, loc) == {**WRITTEN, "when": "2024-03-04"}

    name = f"configmaps.{unique_ns}.dates"
    result = await cnet(served_hub, "get", "manifest", name, "-n", "clusternet-reserved", "-o", "yaml")
    assert result.exit_code == 0, result.output
    assert load_yaml(result.output)["template"]["data"] == WRITTEN

    result = await cnet(served_hub, "apply", "-f", str(tmp_path))
    assert "configmap/dates unchanged" in result.output
    assert (await stored(js, unique_ns))[0].metadata.generation == 1, "re-applying the same text changes nothing"


async def test_hub_yaml_bodies_keep_timestamps_as_written(
    served_hub: ServedHub, js: JetStreamContext, unique_ns: str
) -> None:
    yaml_body = {"Content-Type": "application/yaml"}
    async with served_hub.session() as http:
        async with http.put(SHADOW_OBJECTS_PATH, data=configmap(unique_ns), headers=yaml_body) as resp:
            assert resp.status == 201, await resp.text()
            assert (await resp.json())["template"]["data"] == WRITTEN
        path = f"{APPS}/namespaces/{unique_ns}/localizations/later"
        async with http.put(path, data=localization(unique_ns), headers=yaml_body) as resp:
            assert resp.status == 201, await resp.text()
        async with http.get(f"{APPS}/namespaces/clusternet-reserved/manifests/configmaps.{unique_ns}.dates") as resp:
            assert (await resp.json())["template"]["data"] == WRITTEN

    manifest, loc = await stored(js, unique_ns)
    assert manifest.template["data"] == WRITTEN
    assert overridden(manifest, loc) == {**WRITTEN, "when": "2024-03-04"}


async def test_hub_refuses_what_json_cannot_hold_with_a_clear_400(served_hub: ServedHub, unique_ns: str) -> None:
    yaml_body = {"Content-Type": "application/yaml"}
    async with served_hub.session() as http:
        bomb = "\n".join(
            ["l0: &l0 [x,x,x,x,x,x,x,x,x,x]"] + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
        )
        for body, headers, message in (
            (bomb, yaml_body, "values once aliases are expanded"),
            ("[" * 500 + "]" * 500, {"Content-Type": "application/json"}, "nested deeper than"),
            (configmap(unique_ns).encode().replace(b"dates", b"d\xe4tes"), yaml_body, "is not UTF-8"),
        ):
            async with http.put(SHADOW_OBJECTS_PATH, data=body, headers=headers) as resp:
                assert resp.status == 400, await resp.text()
                status = await resp.json()
            assert status["kind"] == "Status" and message in status["message"]
